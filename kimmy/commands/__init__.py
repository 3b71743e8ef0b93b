"""The `kimmy` commands, one module per group (`kimmy.app.COMMANDS` names them). Each
imports only typer and `kimmy.options` at its top; what a command needs loads when it runs.
"""
