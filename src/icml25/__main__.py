from icml25.cli import main

main()
