"""Test doubles: scripted or tiny stand-ins for the real things, for mechanics tests.

- ``analysis``: :class:`ScriptedAnalysis`, fixed answers to the decode loop's questions;
- ``tiny``: a tiny randomly initialised Gemma 3 and a character tokenizer;
- ``toyvocab``: a twenty-token vocabulary and a greedy tokenizer over it;
- ``fake_upstream``: a scripted upstream language server, run as a process.
"""
