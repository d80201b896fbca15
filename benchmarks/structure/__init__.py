"""How is the code laid out? Import floors, circles, upward arrows, modules per folder."""
