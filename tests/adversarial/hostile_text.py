# Text that acts where it is shown, in an exception's message and its class's name: escape
# sequences that clear the screen (ESC[2J, and C1 CSI 0x9b), write the clipboard (OSC 52) and
# make a hyperlink (OSC 8); a carriage return that overwrites the line with a fake total; a
# bidi override; rich markup that paints a fake green score; HTML, a Markdown image and link,
# and table pipes that would add a row to a Markdown table.
HOSTILE = ("\x1b[2J\x1b[H" "\x1b]52;c;aGFja2Vk\x07" "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
           "\rtotal 100/100 " "\x9b2J" "\u202eevil\u202c " "[green]100/100[/] " "<script>alert(1)</script> "
           "\n| softmax | 5/5 | passed |\n" "![x](http://evil.example/p.png) " "[y](http://evil.example/)")
Hostile = type("Hostile\x1b[2J[green]Fake[/]", (Exception,), {})


def softmax(x, axis=-1):
    raise Hostile(HOSTILE)
