// Files that do not yet pass the strict type-checked rules (415 errors in 77 files when this list was made; 74 files now), so
// `npm run lint` can hold every other file to them now. Issue #23: fix a file, delete its line, never add one.
// `npx eslint --no-ignore <file>` shows what is left in a file.
export const pendingStrictLint = [
  'bench/children/echo.ts', // 1
  'bench/children/ipc.ts', // 8
  'bench/children/sandbox.ts', // 4
  'bench/connector.ts', // 22
  'bench/context.ts', // 5
  'bench/heap.ts', // 5
  'bench/load.ts', // 3
  'bench/naive.ts', // 40
  'bench/processes.ts', // 19
  'bench/profile.ts', // 1
  'bench/report.ts', // 8
  'bench/run.ts', // 3
  'bench/scenarios/economy.ts', // 5
  'bench/scenarios/invoiceLookup.ts', // 9
  'bench/scenarios/memory.ts', // 6
  'bench/scenarios/overhead.ts', // 10
  'bench/scenarios/saturation.ts', // 6
  'bench/stats.ts', // 8
  'src/features/parse.ts', // 1
  'src/features/payables/cards.ts', // 23
  'src/features/receivables/cards.ts', // 10
  'src/features/spend/cards.ts', // 2
  'src/teams/adapter.ts', // 19
  'src/teams/bot.ts', // 14
  'src/teams/cardMessages.ts', // 1
  'src/teams/connectorLimits.ts', // 1
  'src/teams/install.ts', // 10
  'src/teams/proactive.ts', // 1
  'src/teams/routes.ts', // 13
  'src/teams/turnClients.ts', // 1
  'test/harness/secretScan.ts', // 1
  'test/integration/bill-filters.test.ts', // 3
  'test/integration/cluster-fleet.test.ts', // 12
  'test/integration/commands-fuzz.test.ts', // 1
  'test/integration/commands-invoices.test.ts', // 2
  'test/integration/fuzz-messages.test.ts', // 5
  'test/integration/notify-restart.test.ts', // 1
  'test/integration/sandbox-demo.test.ts', // 1
  'test/integration/status-metrics.test.ts', // 1
  'test/unit/approvals-cards.test.ts', // 11
  'test/unit/cards-finance.test.ts', // 2
  'test/unit/cards-security.test.ts', // 9
  'test/unit/help-command.test.ts', // 1
  'test/unit/limits-connector.test.ts', // 4
  'test/unit/manifest.test.ts', // 14
  'test/unit/mirror-records.test.ts', // 3
  'test/unit/outbox-confirm.test.ts', // 2
  'test/unit/push-feed.test.ts', // 1
  'test/unit/redis-sessions.test.ts', // 6
  'test/unit/redis-stale-broadcast.test.ts', // 1
  'test/unit/webhooks-receiver.test.ts', // 1
];
