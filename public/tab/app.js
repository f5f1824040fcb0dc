// The BILL dashboard tab in the browser: TeamsJS for the person's theme, team and sign-in token, then the dashboard API,
// drawn with textContent only (vendor, customer and bill names come from BILL and are never parsed as HTML).
const TEAMS_ONLY = 'The BILL dashboard runs inside Microsoft Teams: open it from the billbridge app or a channel tab in Teams.';
/** How long a page outside Teams waits for a host that never answers (inside Teams it answers in well under a second). */
const INITIALIZE_TIMEOUT_MS = 4000;
const ENTITY_ID = 'billbridge-dashboard';
/** Times the page asks again by itself when the API says when (Retry-After on a 429 or 503: the mirror still building, a busy minute). */
const RETRIES = 3;
const MAX_RETRY_AFTER_S = 300;
const CONNECT_HINT =
  'To see the bills waiting for your approval, message billbridge "connect" in a personal chat and link your BILL account.';

const teams = window.microsoftTeams;
const root = document.getElementById('app');

/** A new element with a class and text (always textContent). */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function show(...nodes) {
  root.replaceChildren(...nodes);
}

function sentence(text, role) {
  const p = el('p', 'sentence', text);
  if (role) p.setAttribute('role', role);
  return p;
}

/** Teams' themes: default (light), dark, contrast (high contrast); anything else reads as light. */
function applyTheme(theme) {
  document.documentElement.dataset.theme = theme === 'dark' || theme === 'contrast' ? theme : 'default';
}

/** Rejects after `ms` unless `promise` settles first. */
function within(promise, ms) {
  return Promise.race([promise, new Promise((_resolve, reject) => setTimeout(() => reject(new Error('no Teams host answered')), ms))]);
}

function dateTime(iso, locale) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return iso;
  try {
    return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' }).format(when);
  } catch {
    return when.toLocaleString();
  }
}

function count(n, noun) {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Amounts, one per currency, each kept on one line. */
function amounts(list) {
  const ul = el('ul', 'amounts');
  if (list.length === 0) ul.append(el('li', 'amount', '—'));
  for (const m of list) ul.append(el('li', 'amount', m.text));
  return ul;
}

function figure(label, counted, totals, tone) {
  const box = el('div', tone ? `figure ${tone}` : 'figure');
  box.append(el('p', 'figure-label', label), el('p', 'figure-count', counted), amounts(totals));
  return box;
}

/**
 * One bar chart per currency, as the cards draw them (a bar adding dollars to euros is a number nobody owes): a row
 * per label with its bar and its amount as text; the bars are decoration, the figure reads as its rows.
 */
function barCharts(title, rows) {
  const currencies = [];
  for (const row of rows) for (const m of row.amounts) if (!currencies.includes(m.currency)) currencies.push(m.currency);
  return currencies.map((currency) => {
    const name = currencies.length > 1 ? `${title}, ${currency}` : title;
    const chart = el('figure', 'chart');
    chart.setAttribute('aria-label', name);
    chart.append(el('figcaption', 'chart-title', name));
    const list = el('ul', 'bars');
    const of = (row) => row.amounts.find((m) => m.currency === currency);
    const max = Math.max(0, ...rows.map((row) => of(row)?.amount ?? 0));
    for (const row of rows) {
      const money = of(row);
      const li = el('li', 'bar-row');
      const track = el('span', 'bar');
      track.setAttribute('aria-hidden', 'true');
      const fill = el('span', 'bar-fill');
      fill.style.width = `${max > 0 && money ? Math.max(0, (money.amount / max) * 100) : 0}%`;
      track.append(fill);
      li.append(el('span', 'bar-label', row.label), track, el('span', 'amount', money ? money.text : '—'));
      list.append(li);
    }
    chart.append(list);
    return chart;
  });
}

function section(id, title, ...content) {
  const box = el('section', 'panel');
  box.id = id;
  const heading = el('h2', '', title);
  heading.id = `${id}-title`;
  box.setAttribute('aria-labelledby', heading.id);
  box.append(heading, ...content);
  return box;
}

function render(data) {
  const p = data.payables;
  const r = data.receivables;
  const figures = el('div', 'figures');
  figures.append(figure('Due', count(p.dueCount, 'bill'), p.due), figure('Overdue', count(p.overdueCount, 'bill'), p.overdue, 'attention'));
  const owed = el('div', 'figures');
  owed.append(figure('Overdue, owed to you', count(r.owedCount, 'invoice'), r.owed));

  let approvals;
  if (data.approvals === null) approvals = [sentence(CONNECT_HINT)];
  else if (data.approvals.length === 0) approvals = [sentence('Nothing is waiting for your approval.')];
  else {
    const list = el('ul', 'items');
    for (const a of data.approvals) {
      const li = el('li', 'item');
      const head = el('p', 'item-head');
      head.append(el('span', 'item-title', `Bill ${a.number}`), el('span', 'amount', a.amount.text));
      li.append(head, el('p', 'item-detail', `${a.party} · due ${a.due}`));
      list.append(li);
    }
    approvals = [list];
  }

  let events;
  if (data.events.length === 0) events = [sentence('No BILL events yet.')];
  else {
    const list = el('ul', 'items');
    for (const e of data.events) {
      const li = el('li', 'item');
      const time = el('time', 'item-time', dateTime(e.at, data.locale));
      time.dateTime = e.at;
      li.append(time, el('p', 'item-detail', e.text));
      list.append(li);
    }
    events = [list];
  }

  const header = el('header', 'top');
  header.append(el('h1', '', `BILL dashboard · ${data.org.name}`), el('p', 'as-of', `As of ${dateTime(data.asOf, data.locale)}`));
  const grid = el('div', 'grid');
  grid.append(
    section('payables', 'Payables', figures, ...barCharts('Cash out by due day', p.byDay)),
    section('receivables', 'Receivables', owed, ...barCharts('Overdue by age', r.aging)),
    section('approvals', 'Approvals waiting for me', ...approvals),
    section('events', 'Recent BILL events', ...events),
  );
  show(header, grid);
}

/** The dashboard for this person (and this team, in a channel tab); the API decides what they may see. */
async function dashboard(context, retries = RETRIES) {
  show(sentence('Loading the BILL dashboard…', 'status'));
  let token;
  try {
    token = await teams.authentication.getAuthToken();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    show(
      sentence(
        `Teams did not sign you in to billbridge (${why}). If this keeps happening, ask your Microsoft 365 admin to consent to billbridge, then reopen the tab.`,
        'alert',
      ),
    );
    return;
  }
  const team = context.team?.internalId;
  const url = team ? `/api/tab/dashboard?team=${encodeURIComponent(team)}` : '/api/tab/dashboard';
  let res;
  try {
    res = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store', credentials: 'omit' });
  } catch {
    show(sentence('billbridge could not be reached. Check your connection, then reopen the tab.', 'alert'));
    return;
  }
  const body = await res.json().catch(() => undefined);
  if (!res.ok || !body || typeof body !== 'object') {
    const said =
      body && typeof body.error === 'string'
        ? body.error
        : `The dashboard could not be loaded (HTTP ${res.status}). Try again in a minute.`;
    show(sentence(said, 'alert'));
    const wait = Number(res.headers.get('Retry-After'));
    if ((res.status === 429 || res.status === 503) && retries > 0 && wait > 0 && wait <= MAX_RETRY_AFTER_S)
      setTimeout(() => dashboard(context, retries - 1).catch(failed), wait * 1000);
    return;
  }
  if (typeof body.locale === 'string') document.documentElement.lang = body.locale;
  render(body);
}

/** The configuration page of a channel or meeting tab: nothing to choose, the tab shows the team's organisation. */
function configure() {
  const page = el('section', 'panel');
  page.append(
    el('h1', '', 'BILL dashboard'),
    sentence(
      'Select Save to add the BILL dashboard here. It shows the BILL organisation this team is connected to: bills due and overdue, invoices owed, your approvals and recent BILL events.',
    ),
  );
  show(page);
  teams.pages.config.registerOnSaveHandler((saveEvent) => {
    teams.pages.config
      .setConfig({ entityId: ENTITY_ID, contentUrl: `${location.origin}/tab`, suggestedDisplayName: 'BILL dashboard' })
      .then(
        () => saveEvent.notifySuccess(),
        (err) => saveEvent.notifyFailure(err instanceof Error ? err.message : String(err)),
      );
  });
  teams.pages.config.setValidityState(true);
}

async function start() {
  if (!teams) return show(sentence(TEAMS_ONLY));
  try {
    await within(teams.app.initialize(), INITIALIZE_TIMEOUT_MS);
  } catch {
    return show(sentence(TEAMS_ONLY));
  }
  const context = await teams.app.getContext();
  applyTheme(context.app.theme);
  teams.app.registerOnThemeChangeHandler(applyTheme);
  // Hides Teams' loading indicator; a host that does not answer it changes nothing here.
  teams.app.notifySuccess().catch(() => undefined);
  if (new URLSearchParams(location.search).get('config') === '1') configure();
  else await dashboard(context);
}

function failed() {
  show(sentence('Something went wrong showing the BILL dashboard. Reopen the tab to try again.', 'alert'));
}

start().catch(failed);
