"""Ollama's door (`/api/chat`, `/api/generate`, the model routes): its bodies, their translation, the routes."""
