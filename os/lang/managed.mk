# The managed languages' clock probes (issue 36): Java, Python, Node.js and .NET, each built
# with its own toolchain into LANG_DIR. A missing toolchain fails its own rule with one line
# naming the Debian package; `make -k lang` still builds the other languages.
JAVAC ?= javac
NODE ?= node
MCS ?= mcs

LANG_MANAGED := $(LANG_DIR)/java/Probe.class $(LANG_DIR)/probe.py $(LANG_DIR)/probe.js $(LANG_DIR)/Probe.exe \
	$(LANG_DIR)/Probe.runtimeconfig.json
LANG_PROBES += $(LANG_MANAGED)

# --release 8 (class file version 52, issue 48): the class runs on Java 8 and every later JVM,
# os-vm's jlink'd JDK 17 among them. -Xlint:-options: a javac from 21 on warns that 8 is obsolete.
# The probe is the one class (no nested or anonymous classes), so Probe.class is all there is.
$(LANG_DIR)/java/Probe.class: os/lang/java/Probe.java
	@command -v $(JAVAC) >/dev/null || { echo "error: $(JAVAC) not found: install 'openjdk-17-jdk-headless' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,JAVAC,$@)$(JAVAC) --release 8 -Xlint:all,-options -Werror -d $(dir $@) $<
	@set -- $(dir $@)*.class; [ "$$*" = "$@" ] || { echo "error: javac made more than Probe.class ($$*): the bundle carries that one file"; rm -f "$$@"; exit 1; }

# Python and JavaScript run from source: the copy is checked by its own runtime's parser first
$(LANG_DIR)/probe.py: os/lang/python/probe.py
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found: install 'python3' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,PYCHECK,$@)$(PYTHON) -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' $<
	$(Q)cp $< $@

$(LANG_DIR)/probe.js: os/lang/node/probe.js
	@command -v $(NODE) >/dev/null || { echo "error: $(NODE) not found: install 'nodejs' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,NODECHK,$@)$(NODE) --check $<
	$(Q)cp $< $@

# Mono's C# compiler (its random module id made a hash of the content: scripts/pe_mvid.py, so that
# the bundle rebuilds bit for bit); the assembly runs under mono (Debian's mono-runtime) or CoreCLR's dotnet
$(LANG_DIR)/Probe.exe: os/lang/dotnet/Probe.cs scripts/pe_mvid.py
	@command -v $(MCS) >/dev/null || { echo "error: $(MCS) not found: install 'mono-mcs' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,MCS,$@)$(MCS) -optimize+ -warnaserror+ -out:$@ $<
	$(Q)$(PYTHON) scripts/pe_mvid.py $@ || { rm -f $@; exit 1; }

# What CoreCLR's `dotnet Probe.exe` asks for beside the assembly (any .NET from 6 on, whose
# mscorlib and System facades forward to its own types); mono ignores it
$(LANG_DIR)/Probe.runtimeconfig.json: os/lang/managed.mk
	@mkdir -p $(dir $@)
	$(Q)printf '%s\n' '{"runtimeOptions": {"tfm": "net6.0", "rollForward": "LatestMajor",' \
		'  "framework": {"name": "Microsoft.NETCore.App", "version": "6.0.0"}}}' > $@
