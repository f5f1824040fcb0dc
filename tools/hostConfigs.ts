// Microsoft Teams' Adaptive Card host configs (light, dark, high contrast): the gallery and the render tests lay cards
// out with these so what they show is what a Teams user sees.
//
// Where the values come from:
// - light and dark: the Teams host configs Microsoft publishes with the Adaptive Cards designer
//   (microsoft/AdaptiveCards, source/nodejs/adaptivecards-designer, "microsoftTeamsLight" / "microsoftTeamsDark":
//   'Segoe UI' font stack, sizes 12/14/14/18/24, weights 200/400/600, spacing 8/12/16/20/24 with 16 padding, the
//   foreground colours below in #AARRGGBB, backgrounds #FFFFFF / #F9F8F7 light and #2D2C2C / #292828 dark, and the
//   light accent/good/attention/warning container backgrounds #C7DEF9 / #CCFFCC / #FFC5B2 / #FFE2B2 in both themes).
//   Kept as published, including the yellow warning (#F8D22A, 1.47:1 on white): the cards must read right with
//   Teams' real colours, not with colours we wish Teams had.
// - high contrast: the designer has no Teams high-contrast config; the values are Teams' high-contrast palette
//   (Fluent UI Northstar teamsHighContrastTheme: black background, white text, yellow #FFFF01, green #3FF23F,
//   cyan #1AEBFF for accent/links, and a red that stays readable on black).

export type TeamsTheme = 'light' | 'dark' | 'highContrast';

export const TEAMS_THEMES: readonly TeamsTheme[] = ['light', 'dark', 'highContrast'];

interface Palette {
  default: [string, string];
  dark: [string, string];
  light: [string, string];
  accent: [string, string];
  good: [string, string];
  warning: [string, string];
  attention: [string, string];
}

const fg = (p: Palette) =>
  Object.fromEntries(
    (Object.entries(p) as Array<[string, [string, string]]>).map(([name, [normal, subtle]]) => [name, { default: normal, subtle }]),
  ) as Record<keyof Palette, { default: string; subtle: string }>;

const LIGHT: Palette = {
  default: ['#FF252424', '#BF252424'],
  dark: ['#252424', '#BF252424'],
  light: ['#FFFFFF', '#FFF3F2F1'],
  accent: ['#6264A7', '#8B8CC7'],
  good: ['#92C353', '#E592C353'],
  warning: ['#F8D22A', '#E5F8D22A'],
  attention: ['#C4314B', '#E5C4314B'],
};

const DARK: Palette = {
  default: ['#FFFFFFFF', '#BFFFFFFF'],
  dark: ['#FF201F1F', '#FF2D2C2C'],
  light: ['#FFFFFFFF', '#BFFFFFFF'],
  accent: ['#FFA6A7DC', '#FF8B8CC7'],
  good: ['#FF92C353', '#E592C353'],
  warning: ['#FFF8D22A', '#E5F8D22A'],
  attention: ['#FFD74654', '#E5D74654'],
};

/** The dark theme's coloured containers are light, so their text is dark (as published). */
const DARK_ON_LIGHT: Palette = { ...DARK, default: ['#FF201F1F', '#FF2D2C2C'] };

const HIGH_CONTRAST: Palette = {
  default: ['#FFFFFF', '#FFFFFF'],
  dark: ['#000000', '#000000'],
  light: ['#FFFFFF', '#FFFFFF'],
  accent: ['#1AEBFF', '#1AEBFF'],
  good: ['#3FF23F', '#3FF23F'],
  warning: ['#FFFF01', '#FFFF01'],
  attention: ['#FF6B6B', '#FF6B6B'],
};

/** Container background per theme: default, emphasis, accent, good, attention, warning. */
const BACKGROUNDS: Record<TeamsTheme, Record<string, string>> = {
  light: { default: '#FFFFFF', emphasis: '#FFF9F8F7', accent: '#C7DEF9', good: '#CCFFCC', attention: '#FFC5B2', warning: '#FFE2B2' },
  dark: { default: '#FF2D2C2C', emphasis: '#FF292828', accent: '#C7DEF9', good: '#CCFFCC', attention: '#FFC5B2', warning: '#FFE2B2' },
  highContrast: { default: '#000000', emphasis: '#000000', accent: '#000000', good: '#000000', attention: '#000000', warning: '#000000' },
};

/** The page colour around a card in each theme (what Teams paints behind the message). */
export const THEME_PAGE: Record<TeamsTheme, { background: string; text: string; border: string }> = {
  light: { background: '#FFFFFF', text: '#252424', border: '#E0E0E0' },
  dark: { background: '#2D2C2C', text: '#FFFFFF', border: '#3D3D3D' },
  highContrast: { background: '#000000', text: '#FFFFFF', border: '#FFFFFF' },
};

export function teamsHostConfig(theme: TeamsTheme): Record<string, unknown> {
  const bg = BACKGROUNDS[theme];
  const palette = theme === 'light' ? LIGHT : theme === 'dark' ? DARK : HIGH_CONTRAST;
  const coloured = theme === 'dark' ? DARK_ON_LIGHT : palette;
  const style = (name: string, p: Palette) => ({ backgroundColor: bg[name], foregroundColors: fg(p) });
  const sizes = { small: 12, default: 14, medium: 14, large: 18, extraLarge: 24 };
  const weights = { lighter: 200, default: 400, bolder: 600 };
  return {
    choiceSetInputValueSeparator: ',',
    supportsInteractivity: true,
    fontFamily: "'Segoe UI', Tahoma, Geneva, Verdana, sans-serif",
    fontTypes: {
      default: { fontFamily: "'Segoe UI', Tahoma, Geneva, Verdana, sans-serif", fontSizes: sizes, fontWeights: weights },
      monospace: { fontFamily: "'Courier New', Courier, monospace", fontSizes: sizes, fontWeights: weights },
    },
    spacing: { small: 8, default: 12, medium: 16, large: 20, extraLarge: 24, padding: 16 },
    separator: { lineThickness: 1, lineColor: theme === 'light' ? '#EEEEEE' : theme === 'dark' ? '#3D3D3D' : '#FFFFFF' },
    fontSizes: sizes,
    fontWeights: weights,
    imageSizes: { small: 32, medium: 52, large: 100 },
    containerStyles: {
      default: style('default', palette),
      emphasis: style('emphasis', palette),
      accent: style('accent', coloured),
      good: style('good', coloured),
      attention: style('attention', coloured),
      warning: style('warning', coloured),
    },
    actions: {
      maxActions: 6,
      spacing: 'default',
      buttonSpacing: 8,
      showCard: { actionMode: 'inline', inlineTopMargin: 16, style: 'emphasis' },
      preExpandSingleShowCardAction: false,
      actionsOrientation: 'horizontal',
      actionAlignment: 'left',
    },
    adaptiveCard: { allowCustomStyle: false },
    imageSet: { imageSize: 'medium', maxImageHeight: 100 },
    factSet: {
      title: { color: 'default', size: 'default', isSubtle: false, weight: 'bolder', wrap: true, maxWidth: 150 },
      value: { color: 'default', size: 'default', isSubtle: false, weight: 'default', wrap: true },
      spacing: 16,
    },
    table: { cellSpacing: 8 },
    textBlock: { headingLevel: 2 },
  };
}
