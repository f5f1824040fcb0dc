// Shortens identifiers that must appear on a card ("…1234"); bank and tax numbers never reach a card at all (cards
// take named fields, and test/harness/sensitive.ts checks every card against BILL data full of them).

/** "…1234": the end of an identifier that must appear (a BILL id, a card's last digits). Short ids are masked whole. */
export function shortId(id: string): string {
  const s = id.trim();
  if (s === '') return '';
  if (s.length <= 4) return '…';
  return `…${s.slice(-4)}`;
}
