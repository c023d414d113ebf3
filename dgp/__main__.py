from dgp.cli import main

raise SystemExit(main())
