"""Record and replay any harness's model calls through a loopback HTTP proxy.

:mod:`.server` (``ModelProxy``) serves, over its own HTTP/1.1 (:mod:`.serving`; upstream
through :mod:`signal_eval_cli.transport`, as the providers); :mod:`.route` is what a harness sees
(``ctx.proxy``); :mod:`.cassette` stores; :mod:`.matching` keys requests;
:mod:`.apis` and :mod:`.calls` turn a call into signals; :mod:`.session` is one
case's replay state. Nothing is imported here, so ``ctx.proxy`` costs no import.
"""
