// "Invite to the BILL network" on a vendor, customer or network card: sent in the clicker's own BILL session once the
// button's signature (over the conversation's org), their link and their BILL role check out. BILL is asked once: a
// connection request to a network id, else (vendors) an email invitation, within the bill.email budget (5 a minute).
// [I] The Postman collection names no role for the network endpoints: ADMINISTRATOR and ACCOUNTANT manage parties in BILL.
import { BillApiError, NotBound, errorMessage, errorName } from '../../errors.js';
import { asPerson, personCredentials, type UserLinks } from '../approvals/userLinks.js';
import { buttonSigner, dataString } from '../approvals/cardRecords.js';
import type { BillGateway } from '../../bill/gateway.js';
import type { BillOrgClient } from '../../bill/api.js';
import type { Customer, Vendor } from '../../bill/types.js';
import type { OrgBindings } from '../../bindings/bindings.js';
import type { Clock } from '../../infra/clock.js';
import { whileHeld } from '../../infra/state/editLock.js';
import type { AuditTrail } from '../../infra/audit.js';
import { NS, type StateStore } from '../../infra/state/types.js';
import type { Mirror } from '../../mirror/mirror.js';
import { answerKey } from '../../mirror/answers.js';
import { foldName, type PartyKind } from '../../mirror/records.js';
import { escapeMarkdown, executeAction, shortId, type CardAction } from '../../cards/card.js';
import { errorReply } from '../../cards/errorCards.js';
import { clockTime, type FormatOptions } from '../../cards/format.js';
import { auditAdmin } from '../audit.js';
import type { CardActionContext, CardActionHandler, CardActionReply } from '../dispatch.js';
import { NETWORK_INVITE_VERB, invitable, invitedCard, networkStatusWords, type InviteRoute } from './cards.js';
import { refusalCard } from '../approvals/cards.js';

const INVITING_ROLES = new Set(['ADMINISTRATOR', 'ACCOUNTANT']);
/** An invitation on its way holds its party this long at most (a double click, two devices, two instances). */
const INVITE_LOCK_MS = 2 * 60_000;

/** Clicks refused before BILL is asked, by the reason the audit trail records: the heading and why the person sees. */
const REFUSALS = {
  'card data altered': ["This button can't be used", 'Nothing was sent to BILL. Ask for the card again.'],
  'unknown person': ["I can't tell who you are", 'Teams did not say which Microsoft 365 account clicked. Nothing was sent.'],
  'not linked': [
    'Connect your BILL account first',
    'Invitations go to BILL as you, never as billbridge. Type **connect** in a personal chat with me to link your BILL account, then click again. Nothing was sent.',
  ],
} as const;

/** The kept answer of a customer's connection status, as read after an invitation (customers carry no networkStatus in BILL). */
export const customerStatusKey = (customerId: string): string => answerKey('network.customer', { id: customerId });

export interface NetworkInvitesDeps {
  /** People's links to their own BILL identity (the approvals feature's). */
  links: Pick<UserLinks, 'get'>;
  /** config.secretsKey: button data is signed with a key derived from it. */
  secretsKey: Buffer;
  bill: Pick<BillGateway, 'orgAs'>;
  mirror: Pick<Mirror, 'apply' | 'dropAnswer' | 'answers'>;
  /** One invitation at a time per org and party (NS.networkInvites). */
  state: Pick<StateStore, 'setIfAbsent' | 'delete'>;
  /** How long a customer's status read after an invitation is shown on their card (config.cache.objectTtlS). */
  keepStatusS: number;
  orgs: Pick<OrgBindings, 'resolve'>;
  audit: Pick<AuditTrail, 'admin'>;
  clock: Clock;
  fmt: FormatOptions;
  note: string | undefined;
}

/** What an invite button names: the org's vendor or customer, and the network id to connect to (else by name/email). */
interface Target {
  kind: PartyKind;
  id: string;
  networkId?: string;
  networkType?: 'BILL' | 'RPPS';
}

/** What an invite button's signature covers: the conversation's org and the whole target. */
const signed = (orgId: string, t: Target): string[] => [orgId, t.kind, t.id, t.networkId ?? '', t.networkType ?? ''];

export type NetworkInvites = ReturnType<typeof networkInvites>;

/** The signed invite button for a card, and what a click on it does. */
export function networkInvites(deps: NetworkInvitesDeps) {
  const signer = buttonSigner(deps.secretsKey, 'network-invite/sign/v1');
  return {
    button(orgId: string, target: Target, titleText = 'Invite to the BILL network'): CardAction {
      const sig = signer.sign(...signed(orgId, target));
      const { kind, id, networkId: net, networkType: type } = target;
      return executeAction(titleText, { verb: NETWORK_INVITE_VERB, kind, id, sig, net, type });
    },

    async invite(click: Pick<CardActionContext, 'data' | 'scope' | 'caller' | 'correlationId' | 'log'>): Promise<CardActionReply> {
      const { data, scope, caller, log } = click;
      const refuse = async (orgId: string, reason: string, heading: string, why: string) => {
        log.info({ reason }, 'network invitation refused');
        await auditAdmin(deps.audit, click, 'network.invite', 'refused', orgId, { reason }).catch(() => undefined);
        return refusalCard(heading, why);
      };
      try {
        const orgId = await deps.orgs.resolve(scope);
        if (!orgId) throw new NotBound();
        const kind = data.kind === 'vendor' || data.kind === 'customer' ? data.kind : undefined;
        const id = dataString(data.id, 64);
        const networkType = data.type === 'BILL' || data.type === 'RPPS' ? data.type : undefined;
        const networkId = dataString(data.net, 64);
        if (!kind || !id || !signer.verify(data.sig, ...signed(orgId, { kind, id, networkId, networkType })))
          return await refuse(orgId, 'card data altered', ...REFUSALS['card data altered']);
        const target: Target = { kind, id, networkId, networkType };
        if (!scope.tenantId || !caller.aadObjectId) return await refuse(orgId, 'unknown person', ...REFUSALS['unknown person']);
        const link = await deps.links.get({ tenantId: scope.tenantId, aadObjectId: caller.aadObjectId, orgId });
        if (!link) return await refuse(orgId, 'not linked', ...REFUSALS['not linked']);
        const client = deps.bill.orgAs(orgId, personCredentials(link), { priority: 'interactive' });
        const role = (await asPerson(() => client.users.get(link.billUserId))).role?.type ?? '';
        if (!INVITING_ROLES.has(role)) {
          const words = role.replace(/[^A-Z_]/g, '').replaceAll('_', ' ');
          const you = words ? `a${/^[AEIOU]/.test(words) ? 'n' : ''} ${words.toLowerCase()}` : 'a user without a role billbridge knows';
          return await refuse(
            orgId,
            `role ${role || 'unknown'}`,
            "Your BILL role can't send network invitations",
            `In BILL you are ${you}; invitations are sent by an Administrator or Accountant. Nothing was sent.`,
          );
        }
        // One invitation at a time per party: a second click while the first is on its way sends nothing.
        const lock = { ns: NS.networkInvites, key: `${orgId}|${kind}|${id}` };
        const sent = await whileHeld(deps.state, deps.clock, lock, INVITE_LOCK_MS, async () => {
          const vendor = kind === 'vendor' ? await asPerson(() => client.vendors.get(id)) : undefined;
          const party: Vendor | Customer = vendor ?? (await asPerson(() => client.customers.get(id)));
          // A customer's status is its connection request's, which BILL keeps apart from the customer.
          const before = vendor ? vendor.networkStatus : await customerStatus(client, id);
          if (!invitable(before)) {
            const says = escapeMarkdown(networkStatusWords(before) ?? 'connected');
            return refusalCard(`${party.name} is already on the BILL network`, `BILL says: ${says}. Nothing was sent.`);
          }
          const how = await routeOf(client, party.name, target, vendor?.email);
          if (!how) {
            const why =
              kind === 'vendor'
                ? 'No business of exactly that name is in the BILL network and the vendor has no email in BILL. Add an email to the vendor in BILL, or find them with **network** and their name.'
                : 'No business of exactly that name is in the BILL network, and BILL emails invitations only to vendors. Find them with **network** and their name.';
            return refusalCard(`${party.name} was not invited`, `${why} Nothing was sent.`);
          }
          const detail = { party: `${kind} ${shortId(id)}`, how: 'email' in how ? 'email' : `network ${shortId(how.networkId)}` };
          if ('email' in how) await client.network.inviteByEmail(id, how.email);
          else await client.network.invite(kind, id, how.networkId, how.networkType);
          await auditAdmin(deps.audit, click, 'network.invite', 'ok', orgId, detail).catch((err: unknown) =>
            log.error({ err: errorMessage(err) }, 'network invitation sent but its audit record failed'),
          );
          log.info({ orgId, ...detail }, 'network invitation accepted by BILL');
          // The card and the org's mirror show the status as BILL now answers it.
          let status: string | undefined;
          if (kind === 'vendor') {
            const fresh = await client.vendors.get(id).catch(() => undefined);
            if (fresh) await deps.mirror.apply(orgId, 'vendor', fresh).catch(() => undefined);
            status = fresh?.networkStatus;
          } else {
            status = (await client.network.status('customer', id).catch(() => undefined))?.status;
            const key = customerStatusKey(id);
            deps.mirror.dropAnswer(orgId, key);
            await deps.mirror.answers.get(orgId, key, { ttlS: deps.keepStatusS, kinds: ['customer'] }, () => Promise.resolve(status));
          }
          const byName = link.displayName ?? caller.name ?? 'you';
          const at = clockTime(deps.clock.now(), deps.fmt);
          return invitedCard({ kind, name: party.name, how, status, byName, at, note: deps.note });
        });
        if (sent) return sent;
        return refusalCard(
          `An invitation to this ${kind} is already on its way to BILL`,
          'Nothing more was sent. Look at the card again in a minute to see where it stands.',
        );
      } catch (err) {
        log.warn({ err: errorMessage(err), errName: errorName(err) }, 'network invitation failed');
        const timeIn = (ms: number) => clockTime(deps.clock.now() + ms, deps.fmt);
        return { ...errorReply(err, { correlationId: click.correlationId, timeIn }), privateReply: true };
      }
    },
  };
}

/** The button's network id; else the one business of exactly the party's name in the BILL network; else a vendor's email. */
async function routeOf(client: BillOrgClient, partyName: string, target: Target, email?: string): Promise<InviteRoute | undefined> {
  if (target.networkId) return { networkId: target.networkId, networkType: target.networkType ?? 'BILL' };
  const name = foldName(partyName);
  if (name.length >= 3) {
    const exact = (await client.network.search(partyName, 'BILL')).filter((o) => foldName(o.name) === name);
    const only = exact.length === 1 ? exact[0] : undefined;
    if (only) return { networkId: only.id, networkType: 'BILL' };
  }
  return email ? { email } : undefined;
}

async function customerStatus(client: BillOrgClient, customerId: string): Promise<string | undefined> {
  try {
    return (await client.network.status('customer', customerId)).status;
  } catch (err) {
    // [I] A customer never invited may have no request to answer about.
    if (err instanceof BillApiError && err.category === 'notFound') return 'NOT_CONNECTED';
    throw err;
  }
}

/** The card-action route of the invite button; without SECRETS_KEY (no links) it says how invitations are switched on. */
export function networkCardActions(invites: NetworkInvites | undefined): Record<string, CardActionHandler> {
  return {
    [NETWORK_INVITE_VERB]: async (ctx) =>
      invites
        ? invites.invite(ctx)
        : refusalCard(
            'Network invitations are off',
            'They are sent as the person who clicks, and billbridge can keep BILL sign-ins only when SECRETS_KEY is set. Nothing was sent.',
          ),
  };
}
