// The compose box's search commands (Teams message extension, query type): listed once, read by the manifest and the search.
/** Each: the command id (Teams sends it back as value.commandId; answers say it: "No bills match …"), the manifest title
 * (at most 32 characters) and description (128), the search box's title and hint, and what to type (said when nothing matched). */
export const SEARCH_COMMANDS = [
  {
    id: 'bills',
    kind: 'bill',
    title: 'Bills',
    description: "A bill by the vendor's invoice number or the vendor's name; before you type, the bills due this week",
    parameter: { title: 'Invoice number or vendor', description: 'e.g. ACM-95303 or Acme' },
    hint: "Type a vendor's invoice number (ACM-95303) or the first letters of the vendor's name (Acme).",
  },
  {
    id: 'invoices',
    kind: 'invoice',
    title: 'Invoices',
    description: "An invoice you sent, by its number or the customer's name; before you type, the latest invoices",
    parameter: { title: 'Invoice number or customer', description: 'e.g. INV-20860 or Contoso' },
    hint: "Type an invoice number (INV-20860) or the first letters of the customer's name (Contoso).",
  },
  {
    id: 'vendors',
    kind: 'vendor',
    title: 'Vendors',
    description: 'A vendor by the first letters of its name, with its open bills and balance',
    parameter: { title: 'Vendor name', description: 'The first letters of the name, e.g. Acme' },
    hint: "Type the first letters of the vendor's name, e.g. Acme.",
  },
  {
    id: 'customers',
    kind: 'customer',
    title: 'Customers',
    description: 'A customer by the first letters of its name, with its open invoices and balance',
    parameter: { title: 'Customer name', description: 'The first letters of the name, e.g. Contoso' },
    hint: "Type the first letters of the customer's name, e.g. Contoso.",
  },
] as const;

export type SearchCommand = (typeof SEARCH_COMMANDS)[number];

export function searchCommand(id: unknown): SearchCommand | undefined {
  return SEARCH_COMMANDS.find((c) => c.id === id);
}
