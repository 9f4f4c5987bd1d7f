"""fairaudit built-in components, registered through the fairaudit entry-point group."""
