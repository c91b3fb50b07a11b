"""Checks model API request bodies against the official SDKs' request types.

A long-lived process for baton's test servers (baton-test-support's `sdk_oracle`): it reads one
JSON line per request on stdin, `{"wire": "anthropic" | "openai", "beta": bool, "body": {...}}`,
and answers one JSON line, `{"ok": true}` or `{"ok": false, "error": "..."}`. Its first line,
before any request, says whether the SDKs loaded: `{"ready": true, "versions": {...}}` or
`{"ready": false, "error": "..."}`.

The types are the PyPI packages' own: `anthropic`'s `MessageCreateParams` (the streaming or
non-streaming variant, as the body's `stream` says; the beta variant for `?beta=true`) and
`openai`'s chat `CompletionCreateParams`, validated by pydantic's `TypeAdapter`. pydantic
validates `Iterable[...]` fields lazily, so the validated result is walked and every iterable in
it materialised; without that an unknown block type inside `messages` would pass.
"""

import json
import sys
from collections.abc import Iterable, Mapping


def load():
    """The TypeAdapters, keyed by (wire, beta, streaming), and the versions in use."""
    import anthropic
    import openai
    import pydantic
    from anthropic.types import message_create_params as messages
    from openai.types.chat import completion_create_params as chat
    from pydantic import TypeAdapter

    adapters = {
        ("anthropic", False, True): TypeAdapter(messages.MessageCreateParamsStreaming),
        ("anthropic", False, False): TypeAdapter(messages.MessageCreateParamsNonStreaming),
        ("openai", False, True): TypeAdapter(chat.CompletionCreateParamsStreaming),
        ("openai", False, False): TypeAdapter(chat.CompletionCreateParamsNonStreaming),
    }
    try:
        from anthropic.types.beta import message_create_params as beta
    except ImportError:
        beta = None
    if beta is not None:
        adapters[("anthropic", True, True)] = TypeAdapter(beta.MessageCreateParamsStreaming)
        adapters[("anthropic", True, False)] = TypeAdapter(beta.MessageCreateParamsNonStreaming)
    versions = {
        "anthropic": anthropic.__version__,
        "openai": openai.__version__,
        "pydantic": pydantic.VERSION,
        "anthropic_beta_types": beta is not None,
    }
    return adapters, versions


def loc_text(loc):
    return ".".join(str(part) for part in loc)


def describe(error, prefix=()):
    """A pydantic ValidationError in one line: its errors with their paths, or, for a value that
    matches none of a union's types (dozens of errors), where it is and the first mismatch."""
    errors = error.errors(include_url=False)
    locs = [tuple(prefix) + tuple(item.get("loc", ())) for item in errors]
    texts = [f"{loc_text(loc)}: {item.get('msg')}" if loc else str(item.get("msg"))
             for loc, item in zip(locs, errors)]
    if len(texts) <= 3:
        return "; ".join(texts)
    common = []
    for parts in zip(*locs):
        if any(part != parts[0] for part in parts):
            break
        common.append(parts[0])
    where = loc_text(common) or "body"
    return f"{where}: matches none of the SDK's types ({len(texts)} mismatches, first: {texts[0]})"


def walk(value, path):
    """Materialises every lazily validated iterable under `value`, raising on the first invalid
    item. Returns the first problem as text, or None."""
    from pydantic import ValidationError

    if isinstance(value, (str, bytes, bytearray)):
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            problem = walk(item, path + (key,))
            if problem:
                return problem
        return None
    if isinstance(value, Iterable):
        try:
            items = list(value)
        except ValidationError as error:
            return describe(error, path)
        for index, item in enumerate(items):
            problem = walk(item, path + (index,))
            if problem:
                return problem
    return None


def check(adapters, request):
    from pydantic import ValidationError

    wire = request.get("wire")
    body = request.get("body")
    if wire not in ("anthropic", "openai"):
        return f"unknown wire {wire!r}"
    beta = bool(request.get("beta")) and wire == "anthropic"
    if beta and (wire, True, True) not in adapters:
        beta = False
    streaming = isinstance(body, dict) and body.get("stream") is True
    adapter = adapters[(wire, beta, streaming)]
    try:
        validated = adapter.validate_python(body)
    except ValidationError as error:
        return describe(error)
    return walk(validated, ())


def main():
    try:
        adapters, versions = load()
    except Exception as error:  # noqa: BLE001 - any import problem is reported, not raised
        print(json.dumps({"ready": False, "error": f"{type(error).__name__}: {error}"}), flush=True)
        return 1
    print(json.dumps({"ready": True, "versions": versions}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            problem = check(adapters, json.loads(line))
        except Exception as error:  # noqa: BLE001 - answer every line, whatever happens
            problem = f"oracle error: {type(error).__name__}: {error}"
        answer = {"ok": True} if problem is None else {"ok": False, "error": problem}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
