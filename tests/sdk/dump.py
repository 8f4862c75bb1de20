"""A provider response as its SDK saves it by default.

    dump.py PROVIDER FILE [--snake]

reads a response body (JSON, as the provider returned it), parses it into
the SDK's own response type, and prints the SDK's default JSON dump:
`model_dump(mode="json")`, which keeps every field the response did not
set as `null`. For gemini the dump uses the API's camelCase names
(`by_alias=True`) unless `--snake` asks for the SDK's snake_case ones.
PROVIDER: openai-chat, openai-responses, anthropic, gemini.
"""

import json
import sys


def model(provider: str):
    if provider == "openai-chat":
        from openai.types.chat import ChatCompletion

        return ChatCompletion
    if provider == "openai-responses":
        from openai.types.responses import Response

        return Response
    if provider == "anthropic":
        from anthropic.types import Message

        return Message
    if provider == "gemini":
        from google.genai.types import GenerateContentResponse

        return GenerateContentResponse
    raise ValueError(f"no SDK dump for {provider}")


def main(argv: list[str]) -> int:
    snake = "--snake" in argv
    argv = [a for a in argv if a != "--snake"]
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    provider, path = argv
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    parsed = model(provider).model_validate(data)
    if provider == "gemini":
        dumped = parsed.model_dump(mode="json", by_alias=not snake)
    else:
        dumped = parsed.model_dump(mode="json")
    print(json.dumps(dumped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
