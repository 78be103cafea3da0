"""What serve's three doors (chat, responses, Ollama) share: the OpenAI chat bodies they translate into, a request
as a plan, one generation, the server's state, client schemas and their checks, errors and the HTTP steps."""
