import type { Command } from 'commander';
import { DEFAULT_CONFIG, DEFAULT_READY_MAX_HEAD_AGE_SECONDS } from '../app.ts';
import { DEV_HARDFORKS, type DevAccount } from '../chain/devChain.ts';
import { createLogger, LOG_LEVELS, type Logger } from '../observe/log.ts';
import { toHex } from '../primitives/hex.ts';
import { apiProcessStop, StartFailure } from '../processes.ts';
import { Service, type Started, type StartPlan } from '../service.ts';
import { redactUrl } from '../upstream/client.ts';
import { addDatabaseOptions, type DatabaseFlags } from './databaseFlags.ts';
import { collect, DATADIR_HELP, type Named } from './flags.ts';
import { DEFAULT_SHUTDOWN_SECONDS, type StartOptions, startPlan } from './startFlags.ts';

/** `ethtrace start`: its flags (src/cli/startFlags.ts), the service (src/service.ts), what it prints. */
export function addStartCommand(root: Command, named: Named): void {
  const start = root
    .command('start')
    .description(
      'serve the chain in the datadir: POST /v3/<KEY> and WebSocket /ws/v3/<KEY>; on an empty datadir, ' +
        'a new dev chain (chain id 31337, the 10 test-mnemonic accounts with 10,000 ether) that mines ' +
        'each transaction as it arrives, or a block every SECONDS with --block-time',
    );
  serverOptions(start);
  limitOptions(start);
  observeOptions(start);
  devOptions(start);
  upstreamOptions(start);
  start
    .option(
      '--processes <n>',
      'API processes on the one port (one per core uses them all; not for a dev chain); limits are shared (default 1)',
    )
    .option(
      '--redis <url>',
      'keep the limits of keys in this Redis (redis://host:port/db), shared by every process and host using it',
    );
  addDatabaseOptions(start, true)
    .option(
      '--operator-token <token>',
      'serve the operator dashboard at /dashboard to whoever gives this token (also $ETHTRACE_OPERATOR_TOKEN)',
    )
    .action((opts: StartOptions & DatabaseFlags) => startCommand(opts));
  named(start, 'start');
}

async function startCommand(o: StartOptions & DatabaseFlags): Promise<void> {
  const plan = startPlan(o, process.env);
  const service = new Service(plan);
  await service.check();
  // Listened for before anything is made or printed: a supervisor (or a test) that stops the server
  // the moment it reads the "serving" line must find the handler installed, not Node's default,
  // which kills the process mid-write. A stop asked for during start-up takes effect once it is up.
  const logger = createLogger({ level: plan.logLevel });
  // An API process of --processes takes its stop from the primary (src/processes.ts).
  const stopRequested =
    service.role === 'api' ? apiProcessStop() : stopOnSignal(logger, () => service.kill());
  await service.start(logger, (started) => announce(started, plan, service.role === 'primary'));
  const failed = await Promise.race([stopRequested.then(() => false), service.failed()]);
  service.stopAccepting();
  if (service.role !== 'api') process.stdout.write('stopping\n');
  await service.close();
  if (failed) throw new StartFailure(1, 'the API processes keep exiting');
}

/**
 * The first signal drains (requests being answered get --shutdown-timeout to finish); a second one
 * exits at once, with the shell's status for death by that signal (128 + its number).
 */
function stopOnSignal(logger: Logger, kill: () => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const first = (signal: NodeJS.Signals) => {
      process.off('SIGINT', first);
      process.off('SIGTERM', first);
      const now = (again: NodeJS.Signals) => {
        kill();
        process.exit(again === 'SIGINT' ? 130 : 143);
      };
      process.once('SIGINT', now);
      process.once('SIGTERM', now);
      logger.info({ signal }, 'stopping: answering the requests under way, then closing');
      resolve();
    };
    process.on('SIGINT', first);
    process.on('SIGTERM', first);
  });
}

/** What a start prints once it listens: a key made for it, the chain, and where to send requests. */
function announce(started: Started, plan: StartPlan, primary: boolean): void {
  const { listening, createdKey } = started;
  let shownKey = plan.apiKeys[0];
  if (createdKey) {
    shownKey = createdKey.key;
    process.stdout.write(
      `created API key "default" (shown once, kept hashed in ${createdKey.path}): ${shownKey}\n`,
    );
  }
  const key = plan.auth ? (shownKey ?? '<API_KEY>') : (shownKey ?? 'any-key');
  if (started.devAccounts) process.stdout.write(describeDevAccounts(started.devAccounts));
  if (plan.upstream)
    process.stdout.write(
      `upstream ${plan.upstream.urls.map(redactUrl).join(', ')}: ${started.upstreamDescription}\n`,
    );
  const { follow } = plan;
  if (follow)
    process.stdout.write(
      `following ${follow.urls.map(redactUrl).join(', ')}: every block executed and verified${follow.verifyStateRoot ? '' : ' (state roots not compared)'}\n`,
    );
  const kind = started.devAccounts ? 'dev ' : plan.upstream ? 'upstream ' : follow ? 'followed ' : '';
  const processes = primary ? ` in ${plan.processes} processes` : '';
  process.stdout.write(
    `ethtrace serving ${kind}chain ${started.chainId} (head ${started.head ?? 'none'}) from ${started.datadir}${processes}\n` +
      `  HTTP       ${listening.httpUrl}/v3/${key}\n  WebSocket  ${listening.wsUrl}/ws/v3/${key}\n` +
      (shownKey === undefined && plan.auth ? '  (use a key from `ethtrace keys create`)\n' : '') +
      (listening.metricsUrl ? `  metrics    ${listening.metricsUrl}/metrics\n` : ''),
  );
}

/** The dev accounts with their keys, as anvil prints them: they are test keys, never to hold value. */
function describeDevAccounts(accounts: readonly DevAccount[]): string {
  const lines = accounts.map((a, i) => `  (${i}) ${toHex(a.address)}  private key ${toHex(a.privateKey)}`);
  return `dev accounts (10,000 ether each; test keys, known to everyone):\n${lines.join('\n')}\n`;
}

/** Where it listens and who it serves. */
function serverOptions(command: Command): void {
  command
    .option('--datadir <dir>', DATADIR_HELP)
    .option('--host <address>', 'address to listen on', DEFAULT_CONFIG.host)
    .option('--port <port>', 'port to listen on (0: any free port)', String(DEFAULT_CONFIG.port))
    .option(
      '--api-key <key>',
      'accept this key (repeatable; also $ETHTRACE_API_KEYS, comma-separated)',
      collect,
      [],
    )
    .option('--no-auth', 'serve every key, and /');
}

/** The limits of work and of connections (src/config/limits.ts). */
function limitOptions(command: Command): void {
  command
    .option('--workers <n>', 'EVM execution threads')
    .option('--exec-timeout <ms>', 'deadline of one EVM execution')
    .option('--gas-cap <gas>', 'gas limit of calls and traces')
    .option('--max-calls <n>', 'calls in one trace_callMany / eth_simulateV1')
    .option('--trace-cache-mb <mb>', 'memory for replayed blocks')
    .option('--trace-filter-blocks <n>', 'blocks one trace_filter may replay')
    .option('--max-response-mb <mb>', 'largest answer, or batch of answers (default 32)')
    .option('--ws-max-per-ip <n>', 'WebSockets open from one address (default 64)')
    .option('--ws-max-subscriptions <n>', 'subscriptions on one WebSocket (default 1024)')
    .option('--ws-max-buffer-mb <mb>', 'unsent output before a WebSocket is dropped (default 16)')
    .option('--ws-max-per-key <n>', 'WebSockets open with one API key (default 256)')
    .option('--http-max-per-ip <n>', 'HTTP connections open from one address, per process (default 256)')
    .option('--filter-max-per-key <n>', 'polling filters (eth_newFilter & co.) of one API key (default 1024)')
    .option('--filter-max-per-connection <n>', 'polling filters made on one connection (default 128)')
    .option('--filter-max <n>', 'polling filters in all (default 16384)')
    .option(
      '--filter-max-buffer <n>',
      'changes a filter may have waiting before it is removed (default 10000)',
    )
    .option('--filter-timeout-ms <ms>', 'a filter not polled for this long is removed (default 300000)')
    .option('--max-body-mb <mb>', 'largest request body (default 5)')
    .option('--max-batch <n>', 'requests in one batch (default 1000)')
    .option('--header-timeout-ms <ms>', "time to send a request's headers (default 10000)")
    .option('--body-timeout-ms <ms>', "time to send a request's body (default 30000)");
}

/** Metrics, logs, probes and the stop. */
function observeOptions(command: Command): void {
  command
    .option('--no-metrics', 'keep no metrics and serve no /metrics')
    .option('--log-level <level>', `${LOG_LEVELS.join(', ')}: one JSON line per request at info`, 'info')
    .option(
      '--metrics-port <port>',
      'serve /metrics (and /health, /ready) on this port only (default: the API port)',
    )
    .option('--metrics-host <address>', 'address of --metrics-port', '127.0.0.1')
    .option(
      '--ready-max-head-age <seconds>',
      `/ready fails when the head is older (default ${DEFAULT_READY_MAX_HEAD_AGE_SECONDS} with --upstream or --block-time)`,
    )
    .option(
      '--shutdown-timeout <seconds>',
      `on SIGTERM/SIGINT, time for requests under way to finish (default ${DEFAULT_SHUTDOWN_SECONDS})`,
    );
}

/** A new dev chain. */
function devOptions(command: Command): void {
  command
    .option('--chain-id <id>', 'chain id of a new dev chain (default 31337)')
    .option('--hardfork <fork>', `fork of a new dev chain: ${DEV_HARDFORKS.join(', ')} (default the last)`)
    .option('--mnemonic <words>', 'mnemonic of the accounts of a new dev chain (default the test one)')
    .option('--block-time <seconds>', 'dev chain: mine a block every SECONDS instead of on each transaction');
}

/** Upstream mode and following. */
function upstreamOptions(command: Command): void {
  command
    .option(
      '--upstream <url>',
      'serve the chain of this node (http(s):// or ws(s)://; repeatable, tried in order): the datadir is its cache',
      collect,
      [],
    )
    .option(
      '--genesis <file>',
      "with --upstream: the chain's genesis file, for a node that cannot say its forks (needed by --follow)",
    )
    .option(
      '--follow',
      "with --upstream and --genesis: fetch, execute and verify every block of the upstream's chain into " +
        'the datadir, keeping in step with its head (reorgs included); served as an imported chain',
    )
    .option('--no-verify-state-root', 'with --follow: accept state roots that differ (chains of dev nodes)')
    .option(
      '--finality-depth <blocks>',
      'with --upstream: blocks after which a block is final without a finalized tag (default 64)',
    )
    .option(
      '--upstream-timeout-ms <ms>',
      'with --upstream: how long one request to it may take (default 10000)',
    )
    .option(
      '--upstream-budget-ms <ms>',
      'with --upstream: how long one client request (and the start) may wait for it in all, retries included (default 15000)',
    )
    .option(
      '--upstream-retries <n>',
      'with --upstream: retries of a failed request, with backoff (default 3)',
    )
    .option('--upstream-max-concurrent <n>', 'with --upstream: requests to it in flight at once (default 32)')
    .option('--upstream-rps <n>', 'with --upstream: requests to it per second, 0 unlimited (default 100)')
    .option('--upstream-poll-ms <ms>', 'with --upstream: how often its head is read (default 1000)');
}
