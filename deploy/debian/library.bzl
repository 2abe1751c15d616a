"""Ringwork as an installable library: one shared object, one static archive, the
public headers.

    ringwork_library(
        name = "libringwork",
        dep = "//:ringwork",
        root_header = "ringwork.h",
        version = "0.1.0",
        soname_version = "0.1",
    )

makes libringwork.so.0.1.0 (soname libringwork.so.0.1), libringwork.a,
libringwork_static_init.a (the objects of alwayslink libraries: a static link
takes it whole), libringwork.link_flags (the system libraries an app links
besides, one flag per line), libringwork.defines (the compile definitions the
headers need, one per line) and the directory libringwork_include (ringwork.h
and every header it includes from this workspace, generated ones too, at their
workspace paths), also as the output groups shared_library, static_library,
static_init_library, link_flags, defines, headers.

Bazel 4's cc_binary(linkshared = True) keeps only the objects something refers
to; a library must keep them all, so this rule links the objects itself.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _libraries_to_link(dep):
    libraries = []
    flags = []
    for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
        libraries.extend(linker_input.libraries)
        for flag in linker_input.user_link_flags:
            if flag not in flags:
                flags.append(flag)
    return libraries, flags

def _objects(libraries, pic, alwayslink):
    objects = []
    for library in libraries:
        if library.alwayslink != alwayslink:
            continue
        chosen = library.pic_objects if pic else library.objects
        if not chosen:
            chosen = library.objects if pic else library.pic_objects
        objects.extend(chosen)
    return objects

def _archive(ctx, out, objects):
    ctx.actions.run(
        executable = ctx.executable._archive_objects,
        arguments = [out.path] + [o.path for o in objects],
        inputs = objects,
        outputs = [out],
        use_default_shell_env = True,
        mnemonic = "RingworkStaticLibrary",
        progress_message = "Archiving %s" % out.short_path,
    )

def _ringwork_library_impl(ctx):
    toolchain = find_cpp_toolchain(ctx)
    libraries, flags = _libraries_to_link(ctx.attr.dep)
    base = ctx.attr.name
    soname = "%s.so.%s" % (base, ctx.attr.soname_version)
    shared = ctx.actions.declare_file("%s.so.%s" % (base, ctx.attr.version))
    static = ctx.actions.declare_file(base + ".a")
    static_init = ctx.actions.declare_file(base + "_static_init.a")
    link_flags = ctx.actions.declare_file(base + ".link_flags")
    defines = ctx.actions.declare_file(base + ".defines")
    headers = ctx.actions.declare_directory(base + "_include")

    # Every object, the alwayslink ones (static initializers nothing refers to)
    # too; --linkopt flags as well (the sanitizers' runtimes).
    pic_objects = (_objects(libraries, pic = True, alwayslink = False) +
                   _objects(libraries, pic = True, alwayslink = True))
    ctx.actions.run(
        executable = toolchain.compiler_executable,
        arguments = [
            "-shared",
            "-o",
            shared.path,
            "-Wl,-soname," + soname,
            "-Wl,-z,defs",
        ] + [o.path for o in pic_objects] + flags + ["-lstdc++", "-lm"] +
                    ctx.fragments.cpp.linkopts,
        inputs = depset(pic_objects, transitive = [toolchain.all_files]),
        outputs = [shared],
        use_default_shell_env = True,
        mnemonic = "RingworkSharedLibrary",
        progress_message = "Linking %s" % shared.short_path,
    )

    # Static: the alwayslink objects in an archive of their own, which a static
    # link takes whole (--whole-archive), since nothing would pull them in.
    _archive(ctx, static, _objects(libraries, pic = False, alwayslink = False))
    _archive(ctx, static_init, _objects(libraries, pic = False, alwayslink = True))

    ctx.actions.write(link_flags, "\n".join(flags) + "\n")
    compilation = ctx.attr.dep[CcInfo].compilation_context
    ctx.actions.write(defines, "\n".join(compilation.defines.to_list()) + "\n")

    include_args = []
    for path in compilation.quote_includes.to_list():
        include_args += ["-iquote", path]
    for path in compilation.includes.to_list():
        include_args += ["-I", path]
    for path in compilation.system_includes.to_list():
        include_args += ["-isystem", path]
    define_args = ["-D" + d for d in compilation.defines.to_list()]
    ctx.actions.run(
        executable = ctx.executable._copy_header_closure,
        arguments = [
            toolchain.compiler_executable,
            ctx.attr.root_header,
            ctx.bin_dir.path,
            headers.path,
        ] + ["-std=c++17"] + define_args + include_args,
        inputs = depset(transitive = [compilation.headers, toolchain.all_files]),
        outputs = [headers],
        use_default_shell_env = True,
        mnemonic = "RingworkPublicHeaders",
        progress_message = "Collecting the headers %s includes" % ctx.attr.root_header,
    )
    return [
        DefaultInfo(files = depset([shared, static, static_init, link_flags, defines, headers])),
        OutputGroupInfo(
            shared_library = depset([shared]),
            static_library = depset([static]),
            static_init_library = depset([static_init]),
            link_flags = depset([link_flags]),
            defines = depset([defines]),
            headers = depset([headers]),
        ),
    ]

ringwork_library = rule(
    implementation = _ringwork_library_impl,
    attrs = {
        "dep": attr.label(providers = [CcInfo], mandatory = True),
        "root_header": attr.string(mandatory = True),
        "version": attr.string(mandatory = True),
        "soname_version": attr.string(mandatory = True),
        "_archive_objects": attr.label(
            default = Label("//deploy/debian:archive_objects"),
            executable = True,
            cfg = "exec",
        ),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
        "_copy_header_closure": attr.label(
            default = Label("//deploy/debian:copy_header_closure"),
            executable = True,
            cfg = "exec",
        ),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    fragments = ["cpp"],
)
