export {
  type FakeOpenAIServer,
  type FakeOpenAIServerOptions,
  type FakeReply,
  type FakeRequest,
  openAIResponseBody,
  type RawReply,
  startFakeOpenAIServer,
} from './fake-openai-server.js';
export {
  analysis,
  blocked,
  complete,
  latestToolResults,
  type Script,
  type ScriptContext,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedToolCall,
  type ScriptedTurn,
  scriptedModel,
  scriptedResponse,
  toolCall,
} from './scripted-model.js';
