// Runs the interop cases with the @a2a-js/sdk ClientFactory client against
// one agent through the gateway, and prints the results as one JSON line:
//
//   {"sdk": "@a2a-js/sdk", "sdkVersion": "1.3.0",
//    "cases": [{"case": "send", "status": "pass|fail", "detail": "..."}]}
//
//   INTEROP_TOKEN=<caller's bearer token> INTEROP_OTHER_TOKEN=<another tenant's token> \
//   node js/client.mjs --base http://127.0.0.1:8080/agents/js --binding JSONRPC --version 1.0 \
//     --grpc-address 127.0.0.1:8081 \
//     --agent-probe http://127.0.0.1:9001 --webhook http://127.0.0.1:9002 --cases send,stream
//
// The client knows the agent only by the card it fetches from --base; tokens
// come from the environment so they never appear in a process listing. The
// card's gRPC interface must be --grpc-address, the gateway's gRPC listener
// for the agent.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { cases } from './lib/cases.mjs';
import { Probes } from './lib/probes.mjs';

const CASE_TIMEOUT_MS = 30000;
const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'];
const VERSIONS = ['1.0', '0.3'];

function sdkVersion() {
  const url = new URL('../node_modules/@a2a-js/sdk/package.json', import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')).version;
}

/** fetch with the caller's bearer token on every request. */
function authorizedFetch(token) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set('Authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

/** "0.3.0" and "0.3" are the same protocol version for interface selection. */
function sameVersion(a, b) {
  return a.split('.').slice(0, 2).join('.') === b.split('.').slice(0, 2).join('.');
}

/**
 * Sends the caller's token as call metadata. The gRPC transport takes no
 * fetch: its metadata are the options' service parameters.
 */
function bearerInterceptor(token) {
  return {
    async before(args) {
      args.options = { ...args.options, serviceParameters: { ...args.options?.serviceParameters, authorization: `Bearer ${token}` } };
    },
    async after() {},
  };
}

function hasBearerScheme(card) {
  return Object.values(card.securitySchemes ?? {}).some(
    (s) => s.scheme?.$case === 'httpAuthSecurityScheme' && s.scheme.value.scheme.toLowerCase() === 'bearer',
  );
}

/**
 * Fetches the agent's card from the gateway and builds a client from it,
 * keeping only the card's interfaces of the wanted binding and version.
 */
async function discover(base, grpcAddress, token, binding, version) {
  const fetchImpl = authorizedFetch(token);
  const legacyCompat = { enabled: true };
  const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat });
  // A base without a trailing slash would drop its last segment when the
  // card path is resolved against it.
  const card = await resolver.resolve(`${base}/`);
  const interfaces = card.supportedInterfaces ?? [];
  // A gRPC interface is a bare host:port: the gateway's listener for the agent.
  const atGateway = (i) =>
    i.protocolBinding.toUpperCase() === 'GRPC' ? i.url === grpcAddress : i.url.startsWith(`${base}/`) || i.url === base;
  const outside = interfaces.filter((i) => !atGateway(i));
  if (outside.length > 0) {
    throw new Error(`the card advertises interfaces outside the gateway: ${outside.map((i) => i.url).join(', ')}`);
  }
  if (!hasBearerScheme(card)) {
    throw new Error(`the card does not describe the gateway's bearer authentication: ${JSON.stringify(card.securitySchemes)}`);
  }
  const wanted = interfaces.filter((i) => i.protocolBinding.toUpperCase() === binding && sameVersion(i.protocolVersion, version));
  if (wanted.length === 0) {
    throw new Error(`the card offers no ${binding} interface at A2A ${version}: ${JSON.stringify(interfaces)}`);
  }
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: resolver,
      transports: [
        new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
        new RestTransportFactory({ fetchImpl, legacyCompat }),
        new GrpcTransportFactory({ legacyCompat }),
      ],
      preferredTransports: [binding],
      clientConfig: binding === 'GRPC' ? { interceptors: [bearerInterceptor(token)] } : undefined,
    }),
  );
  const client = await factory.createFromAgentCard({ ...card, supportedInterfaces: wanted });
  const got = `${client.transport.protocolName} ${client.protocolVersion}`;
  if (client.transport.protocolName.toUpperCase() !== binding || !sameVersion(client.protocolVersion, version)) {
    throw new Error(`the client chose ${got}, want ${binding} ${version}`);
  }
  return { client, detail: `${wanted[0].url} (${got})` };
}

function withTimeout(run) {
  const signal = AbortSignal.timeout(CASE_TIMEOUT_MS);
  const timedOut = new Promise((_, reject) => {
    signal.addEventListener('abort', () => reject(new Error(`timed out after ${CASE_TIMEOUT_MS} ms`)), { once: true });
  });
  return Promise.race([run(signal), timedOut]);
}

function failure(err) {
  return err instanceof Error ? err.message : String(err);
}

async function main() {
  const { values } = parseArgs({
    options: {
      base: { type: 'string' },
      binding: { type: 'string' },
      version: { type: 'string' },
      'grpc-address': { type: 'string' },
      'agent-probe': { type: 'string' },
      webhook: { type: 'string' },
      cases: { type: 'string' },
    },
  });
  for (const required of ['base', 'binding', 'version', 'grpc-address', 'agent-probe', 'webhook', 'cases']) {
    if (!values[required]) {
      throw new Error(`--${required} is required`);
    }
  }
  const binding = values.binding.toUpperCase();
  if (!BINDINGS.includes(binding) || !VERSIONS.includes(values.version)) {
    throw new Error(`unsupported --binding ${values.binding} / --version ${values.version}`);
  }
  const token = process.env.INTEROP_TOKEN;
  const otherToken = process.env.INTEROP_OTHER_TOKEN;
  if (!token || !otherToken) {
    throw new Error('INTEROP_TOKEN and INTEROP_OTHER_TOKEN must be set');
  }
  const names = values.cases.split(',').filter(Boolean);
  const unknown = names.filter((n) => n !== 'card' && !(n in cases));
  if (unknown.length > 0) {
    throw new Error(`unknown cases: ${unknown.join(', ')}`);
  }
  const base = values.base.replace(/\/+$/, '');

  const results = [];
  let env;
  let discoveryError = '';
  try {
    const mine = await discover(base, values['grpc-address'], token, binding, values.version);
    const theirs = await discover(base, values['grpc-address'], otherToken, binding, values.version);
    env = {
      client: mine.client,
      other: theirs.client,
      binding,
      version: values.version,
      probes: new Probes(values['agent-probe'], values.webhook),
    };
    results.push({ case: 'card', status: 'pass', detail: mine.detail });
  } catch (err) {
    discoveryError = failure(err);
    results.push({ case: 'card', status: 'fail', detail: discoveryError });
  }
  for (const name of names.filter((n) => n !== 'card')) {
    if (!env) {
      results.push({ case: name, status: 'fail', detail: `no client: card discovery failed (${discoveryError})` });
      continue;
    }
    try {
      const detail = await withTimeout((signal) => cases[name](env, signal));
      results.push({ case: name, status: 'pass', detail });
    } catch (err) {
      results.push({ case: name, status: 'fail', detail: failure(err) });
    }
  }
  process.stdout.write(JSON.stringify({ sdk: '@a2a-js/sdk', sdkVersion: sdkVersion(), cases: results }) + '\n');
}

main().catch((err) => {
  process.stderr.write(`client: ${err?.stack ?? err}\n`);
  process.exit(2);
});
