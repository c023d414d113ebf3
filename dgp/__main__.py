from dgp.cli import entry

entry()
