from cli.command import main

main()
