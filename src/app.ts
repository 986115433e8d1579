import { ChainReader } from './chain/reader.ts';
import { readStoredSpec } from './chain/storedSpec.ts';
import { DEFAULT_LIMITS, type Limits } from './config/limits.ts';
import { describeForLog, UserError } from './core/errors.ts';
import { type ExecutionClient, PoolExecutionClient } from './exec/client.ts';
import { RpcEnvelope } from './rpc/envelope.ts';
import { METHODS } from './rpc/methods/index.ts';
import type { Services } from './rpc/services.ts';
import { DebugService } from './services/debug.ts';
import type { DevService } from './services/dev/index.ts';
import { ChainEvents } from './services/events.ts';
import { ExecutionService } from './services/execution.ts';
import { FeeService } from './services/fees.ts';
import { FilterService } from './services/filters.ts';
import { LogService } from './services/logs.ts';
import { ReplayService } from './services/replay.ts';
import { StateService } from './services/state.ts';
import { SubscriptionService } from './services/subscriptions.ts';
import { TraceService } from './services/trace.ts';
import type { ChainStore } from './store/types.ts';
import type { KeyRing } from './transport/apiKeys.ts';
import { type Listening, RpcServer } from './transport/server.ts';

export const CLIENT_VERSION = 'ethtrace/v0.1.0';

export interface AppConfig {
  host: string;
  port: number;
  /** null serves every key (and `/`): `--no-auth`. */
  keys: KeyRing | null;
  /** Every limit, each given to the part that enforces it (src/config/limits.ts). */
  limits: Limits;
}

export const DEFAULT_CONFIG: Omit<AppConfig, 'keys'> = {
  host: '127.0.0.1',
  port: 8545,
  limits: DEFAULT_LIMITS,
};

export interface App {
  listen(): Promise<Listening>;
  /** Starts the execution workers now rather than on the first trace (and surfaces their errors). */
  warm(): Promise<void>;
  close(): Promise<void>;
  services: Services;
  execution: ExecutionClient;
}

/** Wires store → services → JSON-RPC envelope → transport. Listening is separate, for tests on port 0. */
export async function buildApp(
  config: AppConfig,
  deps: { store: ChainStore; datadir: string; dev?: DevService; log?: (line: string) => void },
): Promise<App> {
  const spec = await readStoredSpec(deps.store);
  if (spec === null) throw new UserError('the datadir holds no chain: import one first (ethtrace import)');
  const { limits } = config;
  const chain = new ChainReader(deps.store, spec);
  const log = deps.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const execution = new PoolExecutionClient({
    datadir: deps.datadir,
    calls: limits.calls,
    pool: limits.pool,
    maxResultBytes: limits.requests.maxResponseBytes,
    log,
  });
  const fees = new FeeService(chain);
  const logs = new LogService(chain, limits.methods);
  const events = new ChainEvents(deps.store, log);
  await events.start();
  deps.dev?.announceTo(events);
  const services: Services = {
    chain,
    state: new StateService(deps.store),
    logs,
    fees,
    trace: new TraceService(chain, execution, limits.calls),
    replay: new ReplayService(chain, execution, limits.replay),
    debug: new DebugService(chain, execution),
    dev: deps.dev ?? null,
    execution: new ExecutionService(chain, fees, execution),
    subscriptions: new SubscriptionService(
      events,
      chain,
      logs,
      limits.webSocket.maxSubscriptionsPerConnection,
      log,
    ),
    filters: new FilterService(events, chain, logs),
    clientVersion: CLIENT_VERSION,
    limits: limits.methods,
  };
  const envelope = new RpcEnvelope(
    METHODS,
    { services },
    {
      maxBatchSize: limits.requests.maxBatchSize,
      maxResponseBytes: limits.requests.maxResponseBytes,
      batchScope: (work) => execution.batch(work),
    },
    (e, method) => log(`internal error in ${method}: ${describeForLog(e)}`),
  );
  const server = new RpcServer({
    host: config.host,
    port: config.port,
    keys: config.keys,
    limits: { maxBodyBytes: limits.requests.maxBodyBytes, webSocket: limits.webSocket },
    handle: (body, connection) => envelope.handle(body, connection),
  });
  return {
    listen: () => server.listen(),
    warm: () => execution.warm(),
    close: async () => {
      events.stop();
      services.filters.close();
      await server.close();
      await execution.close();
    },
    services,
    execution,
  };
}
