"""Wire codecs: OpenAI and Anthropic formats to and from parlay's internal structures.

Pure functions and small state machines, no I/O: the backends and the proxy share them.
"""
