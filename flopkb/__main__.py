from flopkb.cli import main

main()
