"""The price table, where providers (and users) have always imported it from.

It lives in :mod:`signal_eval_cli.pricing`: data the core reads too (a trace prices a
model call that states no cost), which must not import the providers."""

from signal_eval_cli.pricing import Price, PriceTable, default_prices, parse_price

__all__ = ["Price", "PriceTable", "default_prices", "parse_price"]
