//! Dream's language models over HTTP: OpenAI, Anthropic and OpenAI-compatible servers.
