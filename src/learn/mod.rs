//! learn (under construction in this commit series)
