"""Workspaces: logical clusters that form a tree (`root`, `root:team-a`), each made by a Workspace in its parent."""
