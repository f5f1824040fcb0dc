// `npm run sandbox`: the embedded BILL v3 sandbox on its own, printing its URL and demo credentials.
import { errorMessage } from '../src/errors.js';
import { commandLine } from './args.js';
import { startSandbox } from '../src/sandbox/index.js';

const HELP = `billbridge sandbox — a local BILL v3 API with a simulated demo organisation.

Usage: npm run sandbox -- [--port 4010] [--host 127.0.0.1] [--latency 0] [--invoices 80] [--bills 60]
                          [--seed billbridge-demo] [--dev-key K] [--password P] [--api-token T]

  --port       port to listen on (default 4010; 0 = any free port)
  --latency    milliseconds added to every BILL call (e.g. 120 for benchmarks)
  --invoices   number of invoices in the demo organisation (default 80)
  --bills      number of bills (default 60)
  --seed       seed of the demo data (same seed and sizes = same organisation)
  --dev-key, --password, --api-token
               fixed credentials instead of fresh random ones (so a bot's .env keeps working across restarts)

Point the bot at it with the BILL_* lines printed below. Control endpoints: GET /__sandbox/stats,
POST /__sandbox/bills/{id}/pay, POST /__sandbox/invoices, PATCH /__sandbox/invoices/{id},
POST /__sandbox/sessions/expire, POST /__sandbox/hourly-budget {"limit":n}, POST /__sandbox/latency {"ms":n}.`;

const { values, fail, whole } = commandLine('billbridge sandbox', HELP, {
  port: { type: 'string' },
  host: { type: 'string' },
  latency: { type: 'string' },
  invoices: { type: 'string' },
  bills: { type: 'string' },
  seed: { type: 'string' },
  'dev-key': { type: 'string' },
  password: { type: 'string' },
  'api-token': { type: 'string' },
});

const sandbox = await startSandbox({
  host: (values.host as string | undefined) ?? '127.0.0.1',
  port: whole('port', 4010, 65_535),
  latencyMs: whole('latency', 0, 60_000),
  invoices: whole('invoices', 0, 1_000_000),
  bills: whole('bills', 0, 1_000_000),
  seed: values.seed as string | undefined,
  credentials: {
    devKey: values['dev-key'] as string | undefined,
    password: values.password as string | undefined,
    spendApiToken: values['api-token'] as string | undefined,
  },
}).catch((err: unknown) => fail(`could not start: ${errorMessage(err)}`));

const c = sandbox.credentials;
const o = sandbox.org;
console.log(`BILL sandbox listening at ${sandbox.url} — demo organisation "${o.name}", simulated data

  ${o.vendors.size} vendors, ${o.customers.size} customers, ${o.bills.size} bills, ${o.invoices.size} invoices, ${o.payments.size} payments,
  ${o.spend.transactions.size} card transactions, ${o.spend.reimbursements.size} reimbursements, ${o.spend.budgets.size} budgets

Demo credentials (put these in the bot's .env to use this sandbox as "real" BILL):
  BILL_BASE_URL=${sandbox.baseUrl}
  BILL_EVENTS_BASE_URL=${sandbox.eventsBaseUrl}
  BILL_DEV_KEY=${c.devKey}
  BILL_USERNAME=${c.username}
  BILL_PASSWORD=${c.password}
  BILL_ORG_ID=${c.orgId}
  BILL_SPEND_API_TOKEN=${c.spendApiToken}

Stats: ${sandbox.url}/__sandbox/stats    Stop: Ctrl-C`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  sandbox.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
