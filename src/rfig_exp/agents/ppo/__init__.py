"""PPO with separate extrinsic and intrinsic value heads (PPO+RND style)."""
