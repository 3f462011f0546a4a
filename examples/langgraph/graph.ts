// The example's deep agent: a sandbox backend from @sbx/langgraph and a scripted model, so
// the example runs without network or API keys. Swap `scriptedModel` for a real chat model
// (e.g. `new ChatAnthropic({ model: 'claude-sonnet-4-5' })`) and the graph stays the same.
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { MemorySaver } from '@langchain/langgraph';
import { SbxSandbox, sandboxWithStateRoutes, workspacePrompt } from '@sbx/langgraph';
import { createDeepAgent } from 'deepagents';

/** Two turns: write and run report.py; later, read it again (a human may have changed it) and rerun. */
function scriptedModel(workspace: string) {
  const report = `${workspace}/report.py`;
  return fakeModel()
    .respondWithTools([
      { name: 'write_file', args: { file_path: report, content: 'print("total:", 1 + 2)\n' } },
    ])
    .respondWithTools([{ name: 'execute', args: { command: 'python3 report.py | tee report.log' } }])
    .respond(new AIMessage('report.py prints the total.'))
    .respondWithTools([{ name: 'read_file', args: { file_path: report } }])
    .respondWithTools([{ name: 'execute', args: { command: 'python3 report.py' } }])
    .respond(new AIMessage('Done: it prints the new total.'));
}

/** One backend for every thread; deepagents' own files go to LangGraph state. */
export function makeAgent(backend: SbxSandbox, workspace: string) {
  return createDeepAgent({
    model: scriptedModel(workspace),
    backend: sandboxWithStateRoutes(backend),
    systemPrompt: workspacePrompt(workspace),
    checkpointer: new MemorySaver(),
  });
}
