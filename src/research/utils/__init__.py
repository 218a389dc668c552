"""Small helpers shared across parts that must not depend on each other."""
