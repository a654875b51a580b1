"""HTTP/1.1 as signal-eval speaks it: one lean client and the framing it shares.

The built-in providers, the LLM judge and the model proxy all call model APIs through
:class:`~.client.Client` (keep-alive pools, TLS, proxies from the environment); the
proxy's server (:mod:`signal_eval_cli.proxy.serving`) frames messages with :mod:`.wire`
too. :mod:`.proxies` reads ``HTTP(S)_PROXY``/``NO_PROXY``. No framework: aiohttp's
client alone cost three times the CPU per call of this one. Nothing is imported here.
"""
