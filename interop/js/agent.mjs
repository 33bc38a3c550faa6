// An A2A agent built with @a2a-js/sdk for the gateway's interoperability
// suite: one DefaultRequestHandler served over JSON-RPC (/a2a/jsonrpc) and
// HTTP+JSON (/a2a/rest), A2A 1.0 with the v0.3 compatibility layer on, and
// over gRPC on a port of its own (the SDK's lf.a2a.v1 and a2a.v1 services on
// one server), with the SDK's push-notification sender. It listens on
// 127.0.0.1 only and prints one JSON line, {"port": N, "grpcPort": M}, on
// stdout once it serves.
//
//   node js/agent.mjs [--port N] [--grpc-port M]

import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { parseArgs } from 'node:util';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';
import { LegacyA2AService, legacyGrpcService } from '@a2a-js/sdk/compat/v0_3/server/grpc';
import { createLegacyAwarePushNotificationSender } from '@a2a-js/sdk/compat/v0_3/server';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { ScenarioExecutor } from './lib/executor.mjs';
import { AgentState, CountingBusManager, RecordingPushStore } from './lib/state.mjs';

const JSONRPC_PATH = '/a2a/jsonrpc';
const REST_PATH = '/a2a/rest';
const PUSH_TIMEOUT_MS = 5000;

// The gRPC interface's url is a bare host:port, which the SDKs dial as is.
function agentCard(base, grpcAddress) {
  const iface = (url, protocolBinding) => ({ url, protocolBinding, tenant: '', protocolVersion: A2A_PROTOCOL_VERSION });
  return {
    name: 'interop-js-agent',
    description: 'Agent built with @a2a-js/sdk for the a2a-gateway interoperability suite.',
    supportedInterfaces: duplicateInterfacesForLegacy(
      [iface(base + JSONRPC_PATH, 'JSONRPC'), iface(base + REST_PATH, 'HTTP+JSON'), iface(grpcAddress, 'GRPC')],
      ['JSONRPC', 'HTTP+JSON', 'GRPC'],
    ),
    provider: { organization: 'a2a-gateway', url: 'https://github.com/a2a-gateway/a2a-gateway' },
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'scenarios',
        name: 'Scenarios',
        description: 'The first word of the text picks the task lifecycle: complete, stream N, hold, input.',
        tags: ['interop'],
        examples: ['complete hello', 'stream 3', 'hold', 'input'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
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
  const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, 'grpc-port': { type: 'string', default: '0' } } });
  const port = parsePort('port', values.port);
  const grpcPort = parsePort('grpc-port', values['grpc-port']);

  const app = express();
  const server = await listen(app, port);
  const base = `http://127.0.0.1:${server.address().port}`;
  const grpcServer = new grpc.Server();
  const grpcBound = await listenGrpc(grpcServer, grpcPort);

  const state = new AgentState();
  const pushStore = new RecordingPushStore(state);
  const handler = new DefaultRequestHandler(
    agentCard(base, `127.0.0.1:${grpcBound}`),
    new InMemoryTaskStore(),
    new ScenarioExecutor(state),
    new CountingBusManager(state),
    pushStore,
    createLegacyAwarePushNotificationSender(pushStore, { timeout: PUSH_TIMEOUT_MS }),
  );

  state.mount(app);
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
  const common = { requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } };
  app.use(JSONRPC_PATH, jsonRpcHandler(common));
  app.use(REST_PATH, restHandler(common));
  const grpcCommon = { requestHandler: handler, userBuilder: UserBuilder.noAuthentication };
  grpcServer.addService(A2AService, grpcService(grpcCommon));
  grpcServer.addService(LegacyA2AService, legacyGrpcService(grpcCommon));

  // Open event streams would keep close() waiting: end them too.
  const stop = () => {
    grpcServer.forceShutdown();
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
