#!/usr/bin/env python3
"""A browser for logins in tests: opens the URL it is given and follows
its redirects, as a person's browser would after they approve (the
conformance suite's authorization servers approve at once), which ends at
the host's loopback redirect listener."""

import sys
import urllib.request

urllib.request.urlopen(sys.argv[1], timeout=30).read()
