// The sandbox's BILL payment network: seeded businesses (BILL organisations and RPPS verified national vendors), the
// search, connection requests to vendors and customers, the email invitation for a vendor not in the network, the
// org's users as GET /v3/users/{id} answers them, and /__sandbox/ controls (the invited business accepts).
//
// BILL's shapes (Postman collection "BILL Network"; shared/reference/bill-v3-api.md "BILL Network"):
// - GET /v3/network?name=&scope=BILL|RPPS|ALL[&zipOrPostalCode][&accountNumber] -> {results:[{id, name, type,
//   addresses[], managedBy{name, email, emailDomain}}]}; in BILL the name must be a complete word of 3+ characters
//   (else no results), in RPPS partial matches count and zipOrPostalCode narrows them;
// - POST /v3/network/invitation/vendor/{vendorId} and /customer/{customerId} {networkId, networkType:"BILL"} -> 200,
//   empty: connected at once when the business auto-connects, else an email and a pending request;
// - GET the same paths -> {id, status, networkId}; DELETE cancels; POST /v3/network/invitation/vendor/{vendorId}/email
//   {email} invites a vendor not in the network;
// - vendors carry networkStatus (CONNECTED, NOT_CONNECTED, PENDING, CONNECTED_RPPS); customers do not;
// - BILL documents no network webhook event: a vendor's change raises vendor.updated, and no customer event exists.
// [I] Network ids of BILL organisations start 008 here (RPPS ones 0rv, as documented); `type` values, the errors
// for a repeated or unknown invitation and whether RPPS takes networkType "RPPS" are not documented.
import type { Vendor } from './types.js';
import { bdc } from './gate.js';
import {
  IdFactory,
  type NetworkBusiness,
  type NetworkConnection,
  type NetworkStatus,
  type SandboxModel,
  type SandboxOrg,
} from './model.js';
import { param, sessionOf, type RouteContext, type SandboxRoute } from './server.js';

/** Which parties are in the seeded network: some of the demo org's vendors and customers, and businesses it does not know. */
const SEED: Array<[name: string, scope: 'BILL' | 'RPPS', autoConnect: boolean, zip: string, city: string, state: string]> = [
  ['Acme Office Supplies', 'BILL', true, '98101', 'Seattle', 'WA'],
  ['Northwind Traders', 'BILL', false, '73301', 'Austin', 'TX'],
  ["O'Neil Logistics", 'BILL', true, '80202', 'Denver', 'CO'],
  ['Contoso Ltd', 'BILL', true, '02108', 'Boston', 'MA'],
  ['Fabrikam Inc.', 'BILL', false, '60601', 'Chicago', 'IL'],
  ['Acme Widgets LLC', 'BILL', true, '97201', 'Portland', 'OR'],
  ['Globex Paper Company', 'BILL', false, '10001', 'New York', 'NY'],
  ['Initech Software', 'BILL', true, '94105', 'San Francisco', 'CA'],
  ['Verizon Wireless', 'RPPS', true, '07920', 'Basking Ridge', 'NJ'],
  ['Pacific Gas and Electric', 'RPPS', true, '94105', 'San Francisco', 'CA'],
  ['Comcast Business', 'RPPS', true, '19103', 'Philadelphia', 'PA'],
  ['Acme Water Utility', 'RPPS', true, '98101', 'Seattle', 'WA'],
];

/** Seeds the network (its own id sequence: the demo org's ids and random draws are unchanged). */
export function seedNetwork(model: SandboxModel): void {
  const ids = new IdFactory('bill-network');
  for (const [name, scope, autoConnect, zip, city, state] of SEED) {
    const domain = `${name.toLowerCase().replace(/[^a-z]+/g, '')}.example`;
    model.network.put({
      id: ids.next(scope === 'RPPS' ? '0rv' : '008'),
      name,
      scope,
      autoConnect,
      zipOrPostalCode: zip,
      city,
      stateOrProvince: state,
      managedBy: scope === 'BILL' ? { name: `${name} AP`, email: `ap@${domain}`, emailDomain: domain } : undefined,
    });
  }
}

const words = (s: string) =>
  s
    .toLowerCase()
    .split(/[^\p{L}\p{N}']+/u)
    .filter(Boolean);

/** BILL scope: every word of the term is a complete word of the name; RPPS: the name contains the term. */
function matches(b: NetworkBusiness, term: string, zip: string | undefined): boolean {
  if (b.scope === 'BILL') {
    if (term.trim().length < 3) return false;
    const name = new Set(words(b.name));
    return words(term).every((w) => name.has(w));
  }
  if (zip && !b.zipOrPostalCode.startsWith(zip)) return false;
  return b.name.toLowerCase().includes(term.trim().toLowerCase());
}

function view(b: NetworkBusiness) {
  return {
    id: b.id,
    name: b.name,
    type: b.scope === 'RPPS' ? 'RPPS' : 'BUSINESS',
    addresses: [
      { line1: '1 Main St', city: b.city, stateOrProvince: b.stateOrProvince, zipOrPostalCode: b.zipOrPostalCode, country: 'US' },
    ],
    ...(b.managedBy ? { managedBy: b.managedBy } : {}),
  };
}

const obj = (b: unknown) => (b && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>) : {});

type PartyKind = 'vendor' | 'customer';

function partyOf(ctx: RouteContext, kind: PartyKind) {
  const id = param(ctx, 'id');
  const party = kind === 'vendor' ? ctx.org.vendors.get(id) : ctx.org.customers.get(id);
  if (!party) throw bdc(ctx.clock, 404, 'BDC_1205', `Object with id ${id.slice(0, 40)} was not found.`);
  return party;
}

const connectionKey = (kind: PartyKind, id: string) => `${kind}:${id}`;

/** A vendor's status is its networkStatus; a customer's is the org's record of its connection request. */
function statusOf(org: SandboxOrg, kind: PartyKind, id: string): NetworkConnection {
  const c = org.networkConnections.get(connectionKey(kind, id));
  if (kind === 'vendor') {
    const status = (org.vendors.get(id)?.networkStatus ?? 'NOT_CONNECTED') as NetworkStatus;
    return { ...c, status };
  }
  return c ?? { status: 'NOT_CONNECTED' };
}

/** Records a new status; a vendor's record changes with it and raises vendor.updated (BILL has no network event). */
function setNetworkStatus(model: SandboxModel, org: SandboxOrg, kind: PartyKind, id: string, next: NetworkConnection): void {
  org.networkConnections.set(connectionKey(kind, id), next);
  if (kind !== 'vendor') return;
  const vendor: Vendor | undefined = org.vendors.get(id);
  if (!vendor) return;
  vendor.networkStatus = next.status;
  vendor.updatedTime = model.nowIso();
  org.vendors.put(vendor);
  model.emit({ orgId: org.id, type: 'vendor.updated', version: '1', entityKey: 'vendor', entity: { ...vendor } });
}

function invite(ctx: RouteContext, kind: PartyKind) {
  const party = partyOf(ctx, kind);
  const body = obj(ctx.body);
  if (typeof body.networkId !== 'string' || body.networkId === '') throw bdc(ctx.clock, 400, undefined, 'networkId is required.');
  if (body.networkType !== 'BILL' && body.networkType !== 'RPPS') throw bdc(ctx.clock, 400, undefined, 'networkType must be BILL or RPPS.');
  const business = ctx.model.network.get(body.networkId);
  if (business?.scope !== body.networkType)
    throw bdc(ctx.clock, 400, undefined, `No ${body.networkType} network organization has id ${body.networkId.slice(0, 40)}.`);
  if (business.scope === 'RPPS' && kind === 'customer') throw bdc(ctx.clock, 400, undefined, 'A customer cannot be an RPPS vendor.');
  const now = statusOf(ctx.org, kind, party.id);
  if (now.status !== 'NOT_CONNECTED') throw bdc(ctx.clock, 400, undefined, `The ${kind} already has a connection or a pending request.`);
  const status: NetworkStatus = business.scope === 'RPPS' ? 'CONNECTED_RPPS' : business.autoConnect ? 'CONNECTED' : 'PENDING';
  setNetworkStatus(ctx.model, ctx.org, kind, party.id, { status, networkId: business.id });
  return {};
}

const EMAIL = /^[^\s@<>()[\]\\,;:"]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}$/;

function answerStatus(ctx: RouteContext, kind: PartyKind) {
  const party = partyOf(ctx, kind);
  const c = statusOf(ctx.org, kind, party.id);
  return { body: { id: party.id, status: c.status, ...(c.networkId ? { networkId: c.networkId } : {}) } };
}

/** BILL's role types for the sandbox's users (GET /v3/users/{id} role.type). */
function roleType(role: string): string {
  return role === 'APPROVER' || role === 'PAYER' || role === 'CLERK' ? 'MEMBER' : role;
}

export const networkRoutes: SandboxRoute[] = [
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/network',
    auth: 'session',
    handle: (ctx) => {
      const name = ctx.query.get('name');
      const scope = ctx.query.get('scope') ?? 'BILL';
      if (!name) throw bdc(ctx.clock, 400, undefined, 'name is required.');
      if (scope !== 'BILL' && scope !== 'RPPS' && scope !== 'ALL') throw bdc(ctx.clock, 400, undefined, 'scope must be BILL, RPPS or ALL.');
      const zip = ctx.query.get('zipOrPostalCode') ?? undefined;
      const results = ctx.model.network
        .all()
        .filter((b) => (scope === 'ALL' || b.scope === scope) && matches(b, name, zip))
        .map(view);
      return { body: { results } };
    },
  },
  ...(['vendor', 'customer'] as const).flatMap((kind): SandboxRoute[] => [
    {
      area: 'connect',
      method: 'GET',
      path: `/v3/network/invitation/${kind}/:id`,
      auth: 'session',
      handle: (ctx) => answerStatus(ctx, kind),
    },
    {
      area: 'connect',
      method: 'POST',
      path: `/v3/network/invitation/${kind}/:id`,
      auth: 'session',
      handle: (ctx) => ({ body: invite(ctx, kind) }),
    },
    {
      area: 'connect',
      method: 'DELETE',
      path: `/v3/network/invitation/${kind}/:id`,
      auth: 'session',
      handle: (ctx) => {
        const party = partyOf(ctx, kind);
        setNetworkStatus(ctx.model, ctx.org, kind, party.id, { status: 'NOT_CONNECTED' });
        return {};
      },
    },
  ]),
  {
    area: 'connect',
    method: 'POST',
    path: '/v3/network/invitation/vendor/:id/email',
    auth: 'session',
    handle: (ctx) => {
      const vendor = partyOf(ctx, 'vendor');
      const email = obj(ctx.body).email;
      if (typeof email !== 'string' || !EMAIL.test(email)) throw bdc(ctx.clock, 400, undefined, 'email must be a valid email address.');
      if (statusOf(ctx.org, 'vendor', vendor.id).status !== 'NOT_CONNECTED')
        throw bdc(ctx.clock, 400, undefined, 'The vendor already has a connection or a pending request.');
      setNetworkStatus(ctx.model, ctx.org, 'vendor', vendor.id, { status: 'PENDING', email });
      ctx.org.networkEmails.push({ vendorId: vendor.id, email, at: ctx.model.nowIso(), userId: sessionOf(ctx).userId });
      return {};
    },
  },
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/users/:id',
    auth: 'session',
    handle: (ctx) => {
      const user = ctx.org.users.get(param(ctx, 'id'));
      if (!user) throw bdc(ctx.clock, 404, 'BDC_1205', `Object with id ${param(ctx, 'id').slice(0, 40)} was not found.`);
      const type = roleType(user.role);
      return {
        body: {
          id: user.id,
          archived: false,
          firstName: user.firstName,
          lastName: user.lastName,
          email: user.email,
          role: { id: `rol${type}`, type, description: type },
        },
      };
    },
  },
  // ---- /__sandbox/ controls (not BILL) ----
  {
    area: 'control',
    method: 'POST',
    path: '/network/:kind/:id/accept',
    auth: 'none',
    handle: (ctx) => {
      const kind = param(ctx, 'kind');
      if (kind !== 'vendor' && kind !== 'customer') throw bdc(ctx.clock, 400, undefined, 'kind must be vendor or customer');
      const party = partyOf(ctx, kind);
      const now = statusOf(ctx.org, kind, party.id);
      if (now.status !== 'PENDING') throw bdc(ctx.clock, 400, undefined, 'No pending connection request.');
      setNetworkStatus(ctx.model, ctx.org, kind, party.id, { ...now, status: 'CONNECTED' });
      return { body: statusOf(ctx.org, kind, party.id) };
    },
  },
  { area: 'control', method: 'GET', path: '/network/emails', auth: 'none', handle: (ctx) => ({ body: ctx.org.networkEmails }) },
];
