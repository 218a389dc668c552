"""Plain nn.Modules; nothing here knows about Lightning, datasets or configs."""
