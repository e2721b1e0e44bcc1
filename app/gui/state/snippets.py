"""Copy-paste code that talks to this daemon: the openai SDK, LangChain and curl.

Filled in with the real address, a model the user has, and the API key when one is needed, so a
snippet works the moment it is pasted.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Snippet", "snippets"]


@dataclass(frozen=True, slots=True)
class Snippet:
    title: str
    language: str
    code: str


def snippets(base_url: str, model: str = "qwen:0.5b", api_key: str = "") -> tuple[Snippet, ...]:
    """``base_url`` is the server root (``http://127.0.0.1:11435``); ``/v1`` is added here."""
    v1 = base_url.rstrip("/") + "/v1"
    key = api_key or "localllm"  # the SDKs insist on a key even when the server needs none
    header = f' \\\n  -H "Authorization: Bearer {api_key}"' if api_key else ""
    return (
        Snippet(
            "Python (openai)",
            "python",
            f"""\
from openai import OpenAI

client = OpenAI(base_url="{v1}", api_key="{key}")
reply = client.chat.completions.create(
    model="{model}",
    messages=[{{"role": "user", "content": "Why is the sky blue?"}}],
)
print(reply.choices[0].message.content)
""",
        ),
        Snippet(
            "LangChain",
            "python",
            f"""\
from langchain_openai import ChatOpenAI

llm = ChatOpenAI(base_url="{v1}", api_key="{key}", model="{model}")
print(llm.invoke("Why is the sky blue?").content)
""",
        ),
        Snippet(
            "curl",
            "bash",
            f"""\
curl {v1}/chat/completions \\
  -H "Content-Type: application/json"{header} \\
  -d '{{"model": "{model}", "messages": [{{"role": "user", "content": "Why is the sky blue?"}}]}}'
""",
        ),
    )
