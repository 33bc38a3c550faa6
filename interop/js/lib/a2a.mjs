// Small helpers over the SDK's 1.0 types: building user messages and
// describing results and stream events in the words the cases compare.
//
// The cases give every field of the requests they build, empty where they
// mean nothing: over gRPC the SDK writes an undefined string field as the
// text "undefined", and fails on a message without `extensions`.

import { Role, taskStateToJSON } from '@a2a-js/sdk';

export function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

export function userMessage(text, { taskId = '', contextId = '', messageId = crypto.randomUUID() } = {}) {
  return {
    messageId,
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function sendRequest(message, configuration) {
  return { tenant: '', message, configuration, metadata: undefined };
}

/** "TASK_STATE_INPUT_REQUIRED" -> "input-required", the spelling the cases use. */
export function stateName(state) {
  if (state === undefined) {
    return 'none';
  }
  return taskStateToJSON(state).replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, '-');
}

export function isTask(result) {
  return result !== null && typeof result === 'object' && 'status' in result && 'id' in result;
}

/** Asserts that a send result is a task and returns it. */
export function asTask(result, what) {
  if (!isTask(result)) {
    throw new Error(`${what}: expected a task, got ${JSON.stringify(result)}`);
  }
  return result;
}

export function artifactTexts(task) {
  return (task.artifacts ?? []).flatMap((a) => a.parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value));
}

/**
 * One word per stream event: "task:submitted", "status:working",
 * "artifact:chunk 1", "message".
 */
export function describeEvent(event) {
  const p = event.payload;
  switch (p?.$case) {
    case 'task':
      return `task:${stateName(p.value.status?.state)}`;
    case 'statusUpdate':
      return `status:${stateName(p.value.status?.state)}`;
    case 'artifactUpdate':
      return `artifact:${(p.value.artifact?.parts ?? []).map((x) => (x.content?.$case === 'text' ? x.content.value : '?')).join('')}`;
    case 'message':
      return 'message';
    default:
      return 'unknown';
  }
}

export function eventTaskId(event) {
  const p = event.payload;
  switch (p?.$case) {
    case 'task':
      return p.value.id;
    case 'statusUpdate':
    case 'artifactUpdate':
    case 'message':
      return p.value.taskId;
    default:
      return '';
  }
}
