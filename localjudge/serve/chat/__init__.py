"""OpenAI's chat-completions door (`/v1/chat/completions`): a generation as its answer, whole or streamed."""
