"""Prompt templates and pure prompt builders.

``fim`` loads the FIM formats of ``templates.toml`` and detects one from a vocabulary;
``builder`` lays out the prompt within token budgets; ``postprocess`` decides when
generation stops and what of it to insert; ``scan`` reads brackets and strings for it.
"""
