"""Talking to models: the OpenAI-compatible httpx client and its error tree, the wire format
it reads, the model catalog (offerings and task roles) and the tool registry that turns call
into.
Imports shared.core, shared.infra, shared.files, shared.db, shared.index and
shared.accounts."""
