"""What ``taosync doctor`` checks (``checks``: fleet, state, targets, clients, env,
overrides; ``network``: proxies, DNS, local runtimes). ``taosync/commands/doctor.py``
parses the options and prints the lines."""
