// An A2A agent built with @a2a-js/sdk for the gateway's interoperability
// suite. It serves ONE form, one protocol version over one binding, so that
// the gateway in front of it bridges every other: a DefaultRequestHandler
// over JSON-RPC (/a2a/jsonrpc), HTTP+JSON (/a2a/rest) or gRPC (on a port of
// its own: the SDK's lf.a2a.v1 service for 1.0, its a2a.v1 service for
// 0.3), at 1.0, or at 0.3 through the SDK's v0.3 compatibility layer, with
// the SDK's push-notification sender. Its card names that one interface: a
// 1.0 card for 1.0, a 0.3 card for 0.3. The card and the suite's probe are
// served over HTTP whatever the binding. A request in another version is
// refused by the SDK (VersionNotSupportedError: the handler's card lists
// the one version); another binding is not served at all. It listens on
// 127.0.0.1 only and prints one JSON line, {"port": N, "grpcPort": M} (M is
// 0 unless the binding is gRPC), on stdout once it serves.
//
//   node js/agent.mjs --version 1.0|0.3 --binding JSONRPC|HTTP+JSON|GRPC [--port N] [--grpc-port M]

import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { parseArgs } from 'node:util';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';
import { LegacyA2AService, legacyGrpcService } from '@a2a-js/sdk/compat/v0_3/server/grpc';
import { createLegacyAwarePushNotificationSender } from '@a2a-js/sdk/compat/v0_3/server';
import { A2A_LEGACY_PROTOCOL_VERSION } from '@a2a-js/sdk/compat/v0_3';
import { ScenarioExecutor } from './lib/executor.mjs';
import { AgentState, CountingBusManager, RecordingPushStore } from './lib/state.mjs';

const JSONRPC_PATH = '/a2a/jsonrpc';
const REST_PATH = '/a2a/rest';
const PUSH_TIMEOUT_MS = 5000;

const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'];
const VERSIONS = { '1.0': A2A_PROTOCOL_VERSION, '0.3': A2A_LEGACY_PROTOCOL_VERSION };
const NAME = 'interop-js-agent';
const DESCRIPTION = 'Agent built with @a2a-js/sdk for the a2a-gateway interoperability suite.';
const PROVIDER = { organization: 'a2a-gateway', url: 'https://github.com/a2a-gateway/a2a-gateway' };
const SKILL = {
  id: 'scenarios',
  name: 'Scenarios',
  description: 'The first word of the text picks the task lifecycle: complete, stream N, hold, input.',
  tags: ['interop'],
  examples: ['complete hello', 'stream 3', 'hold', 'input'],
  inputModes: ['text/plain'],
  outputModes: ['text/plain'],
};

/** Where the form is served: a URL, or for gRPC the bare host:port, which the SDKs dial as is. */
function interfaceUrl(base, grpcAddress, binding) {
  return { JSONRPC: base + JSONRPC_PATH, 'HTTP+JSON': base + REST_PATH, GRPC: grpcAddress }[binding];
}

/**
 * The request handler's card, in the SDK's 1.0 types: its one interface is
 * what the SDK checks a request's version against.
 */
function agentCard(url, binding, version) {
  return {
    name: NAME,
    description: DESCRIPTION,
    supportedInterfaces: [{ url, protocolBinding: binding, tenant: '', protocolVersion: VERSIONS[version] }],
    provider: PROVIDER,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ ...SKILL, securityRequirements: [] }],
    signatures: [],
  };
}

/** The card a 0.3 agent serves (0.3 AgentCard: url, preferredTransport, additionalInterfaces). */
function legacyCard(url, binding) {
  return {
    name: NAME,
    description: DESCRIPTION,
    url,
    preferredTransport: binding,
    additionalInterfaces: [{ url, transport: binding }],
    protocolVersion: '0.3.0',
    provider: PROVIDER,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [SKILL],
  };
}

function listenGrpc(server, port) {
  return new Promise((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
}

function parsePort(flag, value) {
  const port = Number.parseInt(value, 10);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`invalid --${flag} ${value}`);
  }
  return port;
}

function listen(app, port) {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, '127.0.0.1');
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

async function main() {
  const { values } = parseArgs({
    options: {
      version: { type: 'string' },
      binding: { type: 'string' },
      port: { type: 'string', default: '0' },
      'grpc-port': { type: 'string', default: '0' },
    },
  });
  const { version, binding } = values;
  if (!(version in VERSIONS) || !BINDINGS.includes(binding)) {
    throw new Error(`want --version 1.0|0.3 and --binding ${BINDINGS.join('|')}, got ${version} / ${binding}`);
  }
  const port = parsePort('port', values.port);
  const grpcPort = parsePort('grpc-port', values['grpc-port']);
  const legacy = version === '0.3';

  const app = express();
  const server = await listen(app, port);
  const base = `http://127.0.0.1:${server.address().port}`;
  const grpcServer = binding === 'GRPC' ? new grpc.Server() : undefined;
  const grpcBound = grpcServer ? await listenGrpc(grpcServer, grpcPort) : 0;
  const url = interfaceUrl(base, `127.0.0.1:${grpcBound}`, binding);

  const state = new AgentState();
  const pushStore = new RecordingPushStore(state);
  const handler = new DefaultRequestHandler(
    agentCard(url, binding, version),
    new InMemoryTaskStore(),
    new ScenarioExecutor(state),
    new CountingBusManager(state),
    pushStore,
    createLegacyAwarePushNotificationSender(pushStore, { timeout: PUSH_TIMEOUT_MS }),
  );

  state.mount(app);
  if (legacy) {
    // A 0.3 agent's card whatever version the reader asks for.
    const card = legacyCard(url, binding);
    app.get(`/${AGENT_CARD_PATH}`, (_req, res) => res.json(card));
  } else {
    app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  }
  // The compatibility layer serves 0.3 requests; without it only 1.0 is read.
  const common = { requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: legacy } };
  if (binding === 'JSONRPC') {
    app.use(JSONRPC_PATH, jsonRpcHandler(common));
  } else if (binding === 'HTTP+JSON') {
    app.use(REST_PATH, restHandler(common));
  } else if (legacy) {
    grpcServer.addService(LegacyA2AService, legacyGrpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  } else {
    grpcServer.addService(A2AService, grpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  }

  // Open event streams would keep close() waiting: end them too.
  const stop = () => {
    grpcServer?.forceShutdown();
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(JSON.stringify({ port: server.address().port, grpcPort: grpcBound }) + '\n');
}

main().catch((err) => {
  process.stderr.write(`agent: ${err?.stack ?? err}\n`);
  process.exit(1);
});
