"""OpenAI's Responses door (`/v1/responses`): its bodies, their translation to and from a chat request, the route."""
