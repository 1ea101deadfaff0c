"""The command sandbox for agents acting on emulated networks.

policy.check(command) decides whether a command string may run and as which argv (no
shell, allowlisted network tools, per-tool argument rules in tools.py); sandbox.
CommandSandbox runs allowed commands on one named machine of a running lab through the
emulator interface (emulators/base.py), with a timeout and an output cap.
"""
