"""Any OpenAI-compatible server: streamed text only, no speculative statistics or counters (no AL)."""
from speedbench.engines.spec import EngineSpec

SPEC = EngineSpec(name="openai", label="OpenAI-compatible", adapter="speedbench.client.engines.openai:OpenAIAdapter")
