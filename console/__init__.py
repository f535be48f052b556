"""The web console: server-rendered pages for the people who run a knowledge base.

Every page acts as one membership (the session's chosen tenant), and reads and writes
through the same selectors and services as the REST API -- there is no second access path.
"""
