"""A DQN in purejaxql's shape, its bonus through the replay buffer (``agent=dqn``; docs/agents/dqn.md)."""
