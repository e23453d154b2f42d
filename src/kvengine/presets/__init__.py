"""Shipped model specs (YAML package data): llama-like, gemma-like, deepseek-v4-like."""
