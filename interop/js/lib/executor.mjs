// The agent's behaviour, driven by the first word of the user's text so that
// every interop case can ask for the task lifecycle it needs. The Go agent
// (interop/goagent) implements the same words; README.md lists them.

import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent } from '@a2a-js/sdk/server';
import { textPart } from './a2a.mjs';

const MAX_CHUNKS = 20;

function textOf(message) {
  for (const part of message?.parts ?? []) {
    if (part.content?.$case === 'text') {
      return part.content.value.trim();
    }
  }
  return '';
}

function agentMessage(taskId, contextId, text) {
  return {
    messageId: crypto.randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function status(state, message) {
  return { state, message, timestamp: new Date().toISOString() };
}

export class ScenarioExecutor {
  /** @param {import('./state.mjs').AgentState} state */
  constructor(state) {
    this.state = state;
  }

  execute = async (ctx, bus) => {
    const { taskId, contextId } = ctx;
    const message = ctx.userMessage;
    this.state.countExecution(message.messageId);
    this.state.remember(taskId, contextId);
    const words = textOf(message).split(/\s+/);
    const publishStatus = (state, text) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: status(state, text ? agentMessage(taskId, contextId, text) : undefined),
          metadata: undefined,
        }),
      );
    const publishArtifact = (artifactId, text, append, lastChunk) =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: { artifactId, name: 'result', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
          append,
          lastChunk,
          metadata: undefined,
        }),
      );

    // Every turn starts with the task itself, follow-ups included.
    bus.publish(
      AgentEvent.task(
        ctx.task ?? {
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED, undefined),
          artifacts: [],
          history: [message],
          metadata: undefined,
        },
      ),
    );

    // "stream N": working, N chunks of one artifact, completed.
    const stream = () => {
      const n = Math.min(Math.max(Number.parseInt(words[1], 10) || 1, 1), MAX_CHUNKS);
      const artifactId = crypto.randomUUID();
      publishStatus(TaskState.TASK_STATE_WORKING);
      for (let i = 1; i <= n; i++) {
        publishArtifact(artifactId, `chunk ${i}`, i > 1, i === n);
      }
      publishStatus(TaskState.TASK_STATE_COMPLETED);
    };

    if (ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED && words[0] === 'stream') {
      stream();
      return;
    }
    if (ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      publishStatus(TaskState.TASK_STATE_WORKING);
      publishArtifact(crypto.randomUUID(), `resumed: ${words.join(' ')}`, false, true);
      publishStatus(TaskState.TASK_STATE_COMPLETED);
      return;
    }

    switch (words[0]) {
      case 'input':
        publishStatus(TaskState.TASK_STATE_INPUT_REQUIRED, 'need more input');
        return;
      case 'stream':
        stream();
        return;
      case 'hold': {
        // Registered before "working" is published: a client that has seen
        // "working" can always release the task.
        const outcome = this.state.hold(taskId);
        publishStatus(TaskState.TASK_STATE_WORKING);
        if ((await outcome) === 'canceled') {
          publishStatus(TaskState.TASK_STATE_CANCELED);
          return;
        }
        publishArtifact(crypto.randomUUID(), 'released', false, true);
        publishStatus(TaskState.TASK_STATE_COMPLETED);
        return;
      }
      default:
        publishStatus(TaskState.TASK_STATE_WORKING);
        publishArtifact(crypto.randomUUID(), `echo: ${words.slice(1).join(' ')}`, false, true);
        publishStatus(TaskState.TASK_STATE_COMPLETED);
    }
  };

  cancelTask = async (taskId, bus) => {
    if (this.state.cancel(taskId)) {
      return; // the held execution publishes "canceled" itself
    }
    // Not running (for example waiting for input): the handler waits for a
    // terminal event on the bus, so publish it here.
    const contextId = this.state.contextOf(taskId);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: status(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, 'canceled')),
        metadata: undefined,
      }),
    );
  };
}
