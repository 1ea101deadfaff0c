"""What the lab apps (routing, netllmbench) share on the app side: the
`{"machine", "command"}` reply format (reply), the pool of live labs with the config keys
it reads (pool), one agent command as an episode step (step), and the read-only
`show(machine, what)` diagnostic (diagnostics).

A library, not an app: it declares no `APP`, so the registry passes it by. The labs
themselves and the command sandbox are environments, in emulators/.
"""
