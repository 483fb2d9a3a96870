"""Option types shared by the commands."""

from __future__ import annotations

from urllib.parse import urlparse

import click


class HttpUrl(click.ParamType):
    """An http(s) URL with a host. Without a scheme, requests said only ``InvalidSchema: No connection adapters were
    found``; this names the option and the fix."""

    name = "URL"

    def convert(self, value, param, ctx):
        text = str(value).strip()
        parsed = urlparse(text)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            self.fail(f"{text!r} is not an http(s) URL; did you mean 'http://{text.split('://')[-1]}'?", param, ctx)
        return text


HTTP_URL = HttpUrl()
