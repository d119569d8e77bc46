"""A minimal client for OpenAI-compatible chat endpoints, on the standard library only.

It posts ``{"model", "messages", "temperature"[, "max_tokens"]}`` to ``{base_url}/chat/completions``
and returns ``choices[0].message.content``. Servers such as vLLM, SGLang, llama.cpp and the OpenAI API
speak this format. Every failure is a :class:`~mrlm.envs.debate.judging.JudgeError` naming the URL.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from mrlm.envs.debate.judging import JudgeError

#: Characters of an error body quoted in a JudgeError.
ERROR_BODY_CHARS = 300


class OpenAIChat:
    """A ``(messages) -> reply`` callable backed by an OpenAI-compatible HTTP endpoint.

    Args:
        base_url: the API root, such as ``"http://localhost:8000/v1"``.
        model: the model name sent with each request.
        api_key_env: the environment variable holding the API key, read at each call (so the key is
            never stored in the object); no ``Authorization`` header when it is unset or empty.
        timeout: seconds to wait for the connection and for the answer.
        temperature: sampling temperature (0 for the most repeatable verdicts).
        max_tokens: the longest reply; None leaves it to the server.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        temperature: float = 0.0,
        max_tokens: int | None = 1024,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.temperature = float(temperature)
        self.max_tokens = max_tokens

    def __repr__(self) -> str:
        return f"OpenAIChat(url={self.url!r}, model={self.model!r})"

    def __call__(self, messages: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read(ERROR_BODY_CHARS).decode("utf-8", "replace")
            raise JudgeError(f"judge endpoint {self.url} answered HTTP {error.code}: {detail}") from error
        except TimeoutError as error:
            raise JudgeError(f"judge endpoint {self.url} did not answer within {self.timeout:g} s") from error
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise JudgeError(
                    f"judge endpoint {self.url} did not answer within {self.timeout:g} s"
                ) from error
            raise JudgeError(f"judge endpoint {self.url} is unreachable: {error.reason}") from error
        except OSError as error:  # connection reset mid-answer and the like
            raise JudgeError(f"judge endpoint {self.url} failed: {error}") from error
        return _content(self.url, raw)


def _content(url: str, raw: bytes) -> str:
    """``choices[0].message.content`` of an answer, or a JudgeError saying what is wrong with it."""
    try:
        answer = json.loads(raw.decode("utf-8", "replace"))
        content = answer["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        snippet = raw[:ERROR_BODY_CHARS].decode("utf-8", "replace")
        raise JudgeError(f"judge endpoint {url} sent an answer with no message content: {snippet}") from error
    if not isinstance(content, str):
        raise JudgeError(f"judge endpoint {url} sent message content of type {type(content).__name__}")
    return content
