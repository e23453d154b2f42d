// Runs generated Jenkins scripted pipelines against a stub of the pipeline DSL and records every step.
//
//   groovy pipeline_stub.groovy scenarios.json   -> prints a JSON list, one result per scenario
//
// A table scenario, {"script": path, "method": name}, returns {"table": the method's return value}
// without running the pipeline. A steps scenario, {"modelled": true}, returns {"modelled": {name: {"plugin":
// the Jenkins plugin that provides it, "named": the named arguments the stub understands, or null}}}, every
// step and global variable the stub models (steps(), the one list). A uses scenario, {"uses": path}, returns {"uses": {name:
// {"named": [named arguments], "at": "file:line" of its first use}}}: every step and global variable the
// script calls, read from its syntax tree (its own methods and variables left out).
// A run scenario returns {"calls": [...], "error": message or null}:
//   {"script": path, "params": {...}, "env": {...},
//    "files": {name: the JSON value readJSON(file: name) returns},
//    "workspace": folder, "execute": [substrings of `sh` scripts to run for real, with bash, in the workspace,
//                                     with the parameters and `env` in their environment, as Jenkins does],
//    "stdout": {substring of an `sh` script not run for real: what it prints, for `returnStdout`},
//    "credentials": {Jenkins credential id: its secret text, which withCredentials binds; others are missing},
//    "archive": folder, where archiveArtifacts copies the workspace's matching files (this build's archive),
//    "builds": {job: [earlier builds, oldest first: {"number": n, "params": {...}, "archive": folder}]}, what
//              copyArtifacts copies from (a build's archive folder as another scenario's "archive" left it),
//    "failing_stages": [names whose `ci-tool stage run` fails, or whose L0_Test run fails],
//    "unstable_stages": [names whose L0_Test run ends UNSTABLE],
//    "running_stages": [names whose `ci-tool stage run`, or whose L0_Test run, is still running when another
//                       branch fails: it runs until fail-fast aborts it (WAIT_SECONDS at most)],
//    "concurrent_stages": [names whose `ci-tool stage run`s, or L0_Test runs, each wait until all of them
//                          have started (WAIT_SECONDS at most): they pass only when their branches overlap],
//    "lost_stages": {name: the retry condition that recognises the loss, "agent" or "kubernetesAgent": the
//                    agent of the `ci-tool stage run` of that name (`A10-PyTorch-1`, `A10-PyTorch-1-attempt-2`)
//                    is lost mid-run; every later step on that agent fails the same way (AgentLost)]}
//
// `retry(count:, conditions:)` runs its body again, up to `count` runs in all, when it failed with an AgentLost
// that one of its conditions recognises (recorded as a "retrying" step), as workflow-basic-steps' retry does;
// any other failure (a test failure, fail-fast's abort) ends it at once. A retry without conditions retries
// every failure, test failures too: the stub does not model it.
//
// `parallel` runs every branch on a thread of its own, as Jenkins does: it returns the branches' results by
// name and, once all have ended, fails with the first failure; with failFast the first failure aborts the
// branches still running (their `finally` blocks still run; recorded as an "aborted" step after the
// branches' steps). Each branch records its steps in a list of its own, joined in the branches' order once
// all have ended, so a run's record does not depend on how the threads were scheduled.
//
// A step, named argument or global variable the stub does not model fails the whole stub run (exit 1, the
// message on stderr): a pipeline that calls one would fail on Jenkins, or run untested here.

import groovy.json.JsonOutput
import groovy.json.JsonSlurperClassic
import groovy.transform.Field
import java.util.concurrent.BrokenBarrierException
import java.util.concurrent.CyclicBarrier
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit
import java.util.concurrent.TimeoutException
import org.codehaus.groovy.ast.ClassCodeVisitorSupport
import org.codehaus.groovy.ast.ClassNode
import org.codehaus.groovy.ast.DynamicVariable
import org.codehaus.groovy.ast.expr.MapExpression
import org.codehaus.groovy.ast.expr.MethodCallExpression
import org.codehaus.groovy.ast.expr.TupleExpression
import org.codehaus.groovy.ast.expr.VariableExpression
import org.codehaus.groovy.control.CompilationUnit
import org.codehaus.groovy.control.Phases
import org.codehaus.groovy.control.SourceUnit
import org.codehaus.groovy.runtime.InvokerHelper

// A step's failure, as Jenkins' AbortException: the build fails with its message.
class PipelineError extends RuntimeException {
    PipelineError(String message) { super(message) }
}

// What Jenkins' credentials binding throws for an id it has no credential of (not a step's failure).
class CredentialNotFound extends RuntimeException {
    CredentialNotFound(String message) { super(message) }
}

// What fail-fast throws into a branch it aborts: Jenkins' FlowInterruptedException is an InterruptedException,
// which the pipelines rethrow where they catch a step's failure.
class BranchAborted extends InterruptedException {
    BranchAborted(String message) { super(message) }
}

// The infrastructure lost a branch's agent: Jenkins' ChannelClosedException (agent disconnected, node removed)
// or a FlowInterruptedException for an evicted pod; `condition` names the retry condition that recognises it.
class AgentLost extends IOException {
    final String condition

    AgentLost(String condition, String message) {
        super(message)
        this.condition = condition
    }

    @Override
    String toString() { "${condition == 'agent' ? 'hudson.remoting.ChannelClosedException' : 'FlowInterruptedException'}: ${message}" }
}

// A step, argument or global the stub does not model. An Error, so that no `catch (Exception)` in a
// pipeline can take it for a step's failure and carry on.
class Unmodelled extends Error {
    Unmodelled(String message) { super(message) }
}

// The binding of a run: the modelled steps and globals, and nothing else. Groovy asks it for every name the
// script does not declare in scope, method calls included; the script's own fields it finds on the script.
class StrictBinding extends Binding {
    private Script script  // this.@script: a Binding's properties are its variables

    StrictBinding(Map variables) { super(variables) }

    void setScript(Script script) { this.@script = script }

    @Override
    Object getVariable(String name) {
        if (!getVariables().containsKey(name)) {
            Script owner = this.@script
            if (owner != null && owner.getMetaClass().hasProperty(owner, name) != null) {
                throw new MissingPropertyException(name, owner.getClass())  // Script.getProperty: the field
            }
            throw new Unmodelled("expected a step or global variable the stub models, found '${name}'")
        }
        return super.getVariable(name)
    }
}

// One thread of a run: the main one, or a `parallel` branch, with what it recorded and what it has bound.
class Branch {
    final String name
    final List calls = []
    final Map bound  // withCredentials' variables, for the `sh` steps inside it
    AgentLost lostAgent  // the loss of the agent of the innermost `node` block, once the infrastructure lost it
    volatile boolean abortRequested = false
    boolean abortDelivered = false
    Thread thread
    Object result
    Throwable failure

    Branch(String name, Map bound) {
        this.name = name
        this.bound = new HashMap(bound)
    }
}

// A step of the DSL: the plugin that provides it, the named arguments the stub understands ([]: none; null:
// a global variable, or a map whose keys are data, as parallel's branch names), and what it does.
class Step {
    final String plugin
    final List named
    final Object value  // a Closure for a step, the value for a global variable

    Step(String plugin, List named, Object value) {
        this.plugin = plugin
        this.named = named
        this.value = value
    }
}

@Field final int WAIT_SECONDS = 30  // the longest a running or concurrent stage waits: generous, the steps take milliseconds
@Field final String UNMODELLED_HINT = 'model it in steps() of tests/ci_tool/generate/pipeline_stub.groovy, as Jenkins runs it'
@Field final GroovyClassLoader loader = new GroovyClassLoader()
@Field final Map compiled = [:]
@Field final ThreadLocal<Branch> current = new ThreadLocal<Branch>()

// Each script is compiled once; every scenario runs a fresh instance with its own binding.
Script instance(String path, Binding binding) {
    Class scriptClass = compiled[path] ?: (compiled[path] = loader.parseClass(new File(path)))
    return InvokerHelper.createScript(scriptClass, binding)
}

Map tableOf(Map scenario) {
    return [table: instance(scenario.script, new Binding()).invokeMethod(scenario.method, null)]
}

void record(Map call) {
    current.get().calls << call.collectEntries { k, v -> [k, v instanceof GString ? v.toString() : v] }
}

// A step's entry: where fail-fast's abort reaches a branch that is between blocking steps.
void checkpoint() {
    Branch branch = current.get()
    synchronized (branch) {  // with abort(): the interrupt that came with the request is cleared with it
        if (branch.abortRequested) {
            Thread.interrupted()  // the abort is delivered here, once
            throw aborted(branch)
        }
    }
}

BranchAborted aborted(Branch branch) {
    branch.abortRequested = false
    branch.abortDelivered = true
    return new BranchAborted("Failed in another branch: ${branch.name} aborted (fail-fast)")
}

// Every step and global variable the generated pipelines may use, and nothing else: the one list the binding
// holds and test_pipeline_stub.py checks against what the generated Groovy calls.
Map steps(Map scenario, Map files, Map stashes) {
    List failing = scenario.failing_stages ?: []
    List unstableStages = scenario.unstable_stages ?: []
    List running = scenario.running_stages ?: []
    List concurrent = scenario.concurrent_stages ?: []
    Map lost = scenario.lost_stages ?: [:]
    CyclicBarrier together = concurrent ? new CyclicBarrier(concurrent.size()) : null
    File workspace = scenario.workspace ? new File(scenario.workspace) : null
    Map credentials = scenario.credentials ?: [:]
    // What a stage's run does before it ends: wait for the concurrent ones, or run until fail-fast aborts it.
    def runsAlongside = { List stages ->
        if (stages.any { it in concurrent }) {
            try {
                together.await(WAIT_SECONDS, TimeUnit.SECONDS)
            } catch (InterruptedException stopped) {
                throw aborted(current.get())
            } catch (TimeoutException | BrokenBarrierException ignored) {
                throw new PipelineError("${stages.join(', ')}: waited ${WAIT_SECONDS} s for ${concurrent.join(', ')} " +
                                        "to run at the same time")
            }
        }
        if (stages.any { it in running }) {
            try {
                Thread.sleep(TimeUnit.SECONDS.toMillis(WAIT_SECONDS))  // woken by fail-fast's interrupt
            } catch (InterruptedException stopped) {
                throw aborted(current.get())
            }
            throw new PipelineError("${stages.join(', ')}: still running after ${WAIT_SECONDS} s; nothing aborted it")
        }
    }
    def parameter = { Map parameter -> parameter }
    return [
        params: new Step('workflow-cps', null, scenario.params),
        env: new Step('workflow-cps', null, scenario.env ?: [:]),
        scm: new Step('workflow-multibranch', null, 'scm'),
        properties: new Step('workflow-multibranch', [], { List properties ->
            List entries = properties.flatten()
            record(step: 'properties', parameters: entries.findAll { it.containsKey('name') }.collect { it.name },
                   copyArtifactPermission: entries.findResult { it.copyArtifactPermission })
        }),
        parameters: new Step('core', [], { List parameters -> parameters }),
        text: new Step('core', ['name', 'defaultValue', 'description', 'value'], parameter),
        booleanParam: new Step('core', ['name', 'defaultValue', 'description', 'value'], parameter),
        // a string parameter, or credentials-binding's secret text binding
        string: new Step('core, credentials-binding',
                         ['name', 'defaultValue', 'description', 'value', 'credentialsId', 'variable'], parameter),
        readJSON: new Step('pipeline-utility-steps', ['file', 'text'], { Map args ->
            if (args.containsKey('file')) {
                if (workspace != null && new File(workspace, args.file).exists()) {
                    return new JsonSlurperClassic().parse(new File(workspace, args.file))
                }
                return (scenario.files ?: [:])[args.file]
            }
            return new JsonSlurperClassic().parseText(args.text)
        }),
        writeJSON: new Step('pipeline-utility-steps', ['returnText', 'json'], { Map args ->
            assert args.returnText
            JsonOutput.toJson(args.json)
        }),
        writeFile: new Step('workflow-basic-steps', ['file', 'text'], { Map args ->
            files[args.file] = args.text
            if (workspace != null) {
                new File(workspace, args.file).text = args.text
            }
            record(step: 'writeFile', file: args.file)
        }),
        // each `node` block gets a fresh agent: a loss stays with the block whose agent was lost
        node: new Step('workflow-durable-task-step', [], { String label, Closure body ->
            record(step: 'node', label: label)
            Branch branch = current.get()
            AgentLost outer = branch.lostAgent
            branch.lostAgent = null
            try {
                return body()
            } finally {
                branch.lostAgent = outer
            }
        }),
        retry: new Step('workflow-basic-steps', ['count', 'conditions'], { Map args, Closure body ->
            if (!args.conditions) {
                throw new Unmodelled('retry: expected conditions (a retry without them retries test failures too)')
            }
            record(step: 'retry', count: args.count, conditions: args.conditions)
            for (int run = 1; ; run++) {
                try {
                    return body()
                } catch (AgentLost loss) {
                    if (run >= args.count || !(loss.condition in args.conditions)) {
                        throw loss
                    }
                    record(step: 'retrying', message: loss.toString())
                }
            }
        }),
        agent: new Step('workflow-durable-task-step', [], { -> 'agent' }),
        kubernetesAgent: new Step('kubernetes', [], { -> 'kubernetesAgent' }),
        nonresumable: new Step('workflow-basic-steps', [], { -> 'nonresumable' }),
        stage: new Step('pipeline-stage-step', [], { String name, Closure body ->
            record(step: 'stage', name: name)
            body()
        }),
        timeout: new Step('workflow-basic-steps', ['time', 'unit'], { Map args, Closure body ->
            record(step: 'timeout', time: args.time, unit: args.unit)
            body()
        }),
        checkout: new Step('workflow-scm-step', [], { scm -> onAgent(); record(step: 'checkout') }),
        echo: new Step('workflow-basic-steps', [], { message -> record(step: 'echo', message: message.toString()) }),
        error: new Step('workflow-basic-steps', [], { message ->
            record(step: 'error', message: message.toString())
            throw new PipelineError(message.toString())
        }),
        unstable: new Step('workflow-basic-steps', [], { message ->
            record(step: 'unstable', message: message.toString())
        }),
        sleep: new Step('workflow-basic-steps', ['time', 'unit'], { Map args ->
            record(step: 'sleep', time: args.time, unit: args.unit)
        }),
        // "credentials": {id: secret text}: withCredentials binds each to its variable for the steps inside it
        // (for `sh`, in the environment of what runs for real, and named in its record), as Jenkins does.
        withCredentials: new Step('credentials-binding', [], { List bindings, Closure body ->
            Map exported = [:]
            for (Map wanted : bindings) {
                if (!credentials.containsKey(wanted.credentialsId)) {
                    record(step: 'withCredentials', missing: wanted.credentialsId)
                    throw new CredentialNotFound("Could not find credentials entry with ID '${wanted.credentialsId}'")
                }
                exported[wanted.variable] = credentials[wanted.credentialsId]
            }
            record(step: 'withCredentials', variables: exported.keySet() as List)
            Map bound = current.get().bound
            Map before = new HashMap(bound)
            bound.putAll(exported)
            try {
                return body()
            } finally {
                bound.clear()
                bound.putAll(before)
            }
        }),
        stash: new Step('workflow-basic-steps', ['name', 'includes'], { Map args ->
            onAgent()
            stashes[args.name] = args.includes
            record(step: 'stash', name: args.name, includes: args.includes)
        }),
        unstash: new Step('workflow-basic-steps', [], { String name ->
            onAgent()
            record(step: 'unstash', name: name)
            if (!stashes.containsKey(name)) {
                throw new PipelineError("No such saved stash '${name}'")
            }
        }),
        sh: new Step('workflow-durable-task-step', ['script', 'returnStdout'], { script ->
            // sh 'script', or sh(returnStdout: true, script: 'script'), which returns what the script printed
            onAgent()
            boolean returnStdout = script instanceof Map && script.returnStdout
            String command = (script instanceof Map ? script.script : script).toString()
            Map bound = current.get().bound
            record(bound ? [step: 'sh', script: command, credentials: bound.keySet() as List] : [step: 'sh', script: command])
            String printed = ''
            (scenario.stdout ?: [:]).each { String wanted, String text -> if (command.contains(wanted)) { printed = text } }
            for (String wanted : scenario.execute ?: []) {
                if (command.contains(wanted)) {
                    printed = execute(command, scenario, workspace, bound)
                    break
                }
            }
            List stages = (failing + running + concurrent).findAll { command.contains(" stage run '${it}' ") }
            runsAlongside(stages)
            String lostHere = lost.keySet().find { command.contains(" stage run '${it}' ") }
            if (lostHere != null) {  // mid-run: the agent is gone, and stays gone for this `node` block
                Branch branch = current.get()
                branch.lostAgent = new AgentLost(lost[lostHere], "the agent running ${lostHere} was lost (${lost[lostHere]})")
                record(step: 'lost', message: branch.lostAgent.toString())
                throw branch.lostAgent
            }
            if (stages.any { it in failing }) {
                throw new PipelineError("script returned exit code 1")
            }
            return returnStdout ? printed : null
        }),
        junit: new Step('junit', ['testResults', 'allowEmptyResults', 'keepProperties'], { Map args ->
            onAgent()
            record(step: 'junit', testResults: args.testResults, allowEmptyResults: args.allowEmptyResults)
        }),
        // With "archive" and a workspace: the workspace's files matching the pattern are copied there, paths kept
        // (an empty match fails the build unless allowEmptyArchive, as Jenkins does).
        archiveArtifacts: new Step('core', ['artifacts', 'allowEmptyArchive'], { Map args ->
            onAgent()
            record(step: 'archiveArtifacts', artifacts: args.artifacts, allowEmptyArchive: args.allowEmptyArchive)
            if (scenario.archive && workspace != null) {
                List found = matching(workspace, args.artifacts)
                if (!found && !args.allowEmptyArchive) {
                    throw new PipelineError("No artifacts found that match the file pattern \"${args.artifacts}\"")
                }
                found.each { String path -> copyFile(new File(workspace, path), new File(scenario.archive as String, path)) }
            }
        }),
        // The Copy Artifact plugin: from the earlier builds of `projectName` in "builds", the one the selector
        // picks among those whose parameters match `parameters` ("NAME=value,..."), its archived files that
        // match `filter` into `target` (flatten: without their folders). No such build or no matching file
        // fails the step, unless `optional`.
        copyArtifacts: new Step('copyartifact', ['projectName', 'selector', 'filter', 'target', 'flatten', 'optional',
                                                 'parameters'], { Map args ->
            Map wanted = (args.parameters ?: '').split(',').findAll { it }.collectEntries { it.split('=', 2) as List }
            List candidates = ((scenario.builds ?: [:])[args.projectName] ?: []).findAll { Map earlier ->
                wanted.every { key, value -> (earlier.params ?: [:])[key] == value }
            }
            Map chosen = args.selector.selector == 'specific'
                ? candidates.find { "${it.number}" == "${args.selector.number}" }
                : candidates.reverse().find { matching(new File(it.archive as String), '**').size() > 0 }
            List found = chosen ? matching(new File(chosen.archive as String), args.filter) : []
            record(step: 'copyArtifacts', projectName: args.projectName, selector: args.selector, filter: args.filter,
                   parameters: args.parameters, build: chosen?.number, copied: found.size())
            if (!found) {
                if (args.optional) {
                    return
                }
                throw new PipelineError("Unable to find a build for artifact copy from: ${args.projectName}")
            }
            File into = new File(workspace, args.target ?: '.')
            found.each { String path ->
                copyFile(new File(chosen.archive as String, path), new File(into, args.flatten ? new File(path).name : path))
            }
        }),
        specific: new Step('copyartifact', [], { String number -> [selector: 'specific', number: number] }),
        lastWithArtifacts: new Step('copyartifact', [], { -> [selector: 'lastWithArtifacts'] }),
        copyArtifactPermission: new Step('copyartifact', [], { String projects -> [copyArtifactPermission: projects] }),
        build: new Step('pipeline-build-step', ['job', 'propagate', 'wait', 'parameters'], { Map args ->
            Map parameters = args.parameters.collectEntries { [it.name, it.value] }
            List stages = new JsonSlurperClassic().parseText(parameters.STAGES)
            List stageRunArgs = new JsonSlurperClassic().parseText(parameters.STAGE_RUN_ARGS)
            // a running one ends only when fail-fast aborts this branch, and the downstream build with it
            String result = stages.any { it in running } ? 'ABORTED' : stages.any { it in failing } ? 'FAILURE'
                : stages.any { it in unstableStages } ? 'UNSTABLE' : 'SUCCESS'
            record(step: 'build', job: args.job, propagate: args.propagate, stages: stages, failFast: parameters.FAIL_FAST,
                   stageRunArgs: stageRunArgs, result: result, parameters: parameters)
            runsAlongside(stages)
            return [result: result]
        }),
        parallel: new Step('workflow-cps', null, { Map branches -> runParallel(branches) }),
    ]
}

// A step that needs the branch's agent fails, as on Jenkins, once the infrastructure has lost that agent.
void onAgent() {
    AgentLost loss = current.get().lostAgent
    if (loss != null) {
        throw new AgentLost(loss.condition, "${loss.message}: no agent to run the step on")
    }
}

// Runs `command` for real in the workspace, so the contract between pipeline and ci-tool is tested; returns
// what it printed. Fail-fast's abort kills it and every process it started, as Jenkins kills an aborted `sh`.
String execute(String command, Map scenario, File workspace, Map bound) {
    Map environment = new HashMap(System.getenv())
    environment.putAll(scenario.params ?: [:])
    environment.putAll(scenario.env ?: [:])
    environment.putAll(bound)
    List variables = environment.collect { k, v -> "${k}=${v}".toString() }
    Process process = ['bash', '-c', command].execute(variables, workspace)
    StringBuilder out = new StringBuilder(), err = new StringBuilder()
    Thread reading = drain(process.inputStream, out), readingErrors = drain(process.errorStream, err)
    try {
        process.waitFor()
    } catch (InterruptedException stopped) {
        process.toHandle().descendants().forEach { it.destroy() }
        process.destroy()
        throw aborted(current.get())
    }
    reading.join()
    readingErrors.join()
    record(step: 'executed', script: command, exitCode: process.exitValue(), stdout: out.toString(),
           stderr: err.toString())
    if (process.exitValue() != 0) {
        throw new PipelineError("script returned exit code ${process.exitValue()}")
    }
    return out.toString()
}

// The files under `folder` (relative paths, sorted) that an Ant pattern of Jenkins matches: `*` within a folder,
// `**` across folders.
List matching(File folder, String pattern) {
    if (!folder.isDirectory()) {
        return []
    }
    def matcher = java.nio.file.FileSystems.default.getPathMatcher("glob:${pattern}")
    List found = []
    folder.eachFileRecurse(groovy.io.FileType.FILES) { File file ->
        def relative = folder.toPath().relativize(file.toPath())
        if (matcher.matches(relative) || (pattern.endsWith('/**') && relative.startsWith(pattern[0..-4]))) {
            found << relative.toString()
        }
    }
    return found.sort()
}

void copyFile(File from, File to) {
    to.parentFile.mkdirs()
    java.nio.file.Files.copy(from.toPath(), to.toPath(), java.nio.file.StandardCopyOption.REPLACE_EXISTING)
}

// Reads `stream` into `into` on a thread of its own. An abort's destroy() closes the stream under the reader;
// what an aborted `sh` printed is not recorded, so that close ends the reading quietly rather than printing a
// stack trace on the stub's stderr, which tests read line by line.
Thread drain(InputStream stream, StringBuilder into) {
    Thread.start {
        try {
            into.append(stream.getText('UTF-8'))
        } catch (IOException closed) {
        }
    }
}

// Jenkins' `parallel`: each branch on its own thread; the branches' results by name once all have ended, or
// the first failure; with failFast the first failure aborts the branches still running.
Map runParallel(Map branches) {
    Branch parent = current.get()
    boolean failFast = branches.failFast ?: false
    List names = branches.keySet().findAll { it != 'failFast' } as List
    record(step: 'parallel', branches: names, failFast: failFast)
    List children = names.collect { new Branch(it as String, parent.bound) }
    LinkedBlockingQueue ended = new LinkedBlockingQueue()
    children.each { Branch child ->
        child.thread = Thread.start("branch ${child.name}") {
            current.set(child)
            try {
                child.result = branches[child.name]()
            } catch (Throwable failure) {
                child.failure = failure
            } finally {
                ended.put(child)
            }
        }
    }
    Throwable first = null
    Set running = new LinkedHashSet(children)
    while (running) {
        Branch child
        try {
            child = ended.take()
        } catch (InterruptedException stopped) {  // this branch itself aborted: so are its branches
            parent.abortRequested = true
            running.each { abort(it) }
            continue
        }
        running.remove(child)
        if (child.failure != null && !child.abortDelivered) {
            if (first == null) {
                first = child.failure
                if (failFast) {
                    running.each { abort(it) }
                }
            } else {
                first.addSuppressed(child.failure)
            }
        }
    }
    children.each { parent.calls.addAll(it.calls) }
    List abortedNames = children.findAll { it.abortDelivered }*.name
    if (abortedNames) {
        record(step: 'aborted', branches: abortedNames)
    }
    if (parent.abortRequested) {
        checkpoint()
    }
    Throwable unmodelled = children*.failure.find { it instanceof Unmodelled }
    if (unmodelled != null) {
        throw unmodelled  // never hidden behind another branch's failure
    }
    if (first != null) {
        throw first
    }
    return children.collectEntries { [it.name, it.result] }
}

void abort(Branch branch) {
    synchronized (branch) {
        branch.abortRequested = true
        branch.thread.interrupt()  // wakes a step that waits: a running stage, a real `sh`
    }
}

// The binding's value for a step: its closure behind the fail-fast checkpoint and the check of its named
// arguments; a global variable as it is.
Object bindingValue(String name, Step step) {
    if (!(step.value instanceof Closure)) {
        return step.value
    }
    Closure body = step.value
    return { Object... arguments ->
        checkpoint()
        if (step.named != null && arguments && arguments[0] instanceof Map) {
            List unknown = (arguments[0] as Map).keySet().findAll { !(it in step.named) } as List
            if (unknown) {
                throw new Unmodelled("${name}: expected the named arguments the stub models " +
                                     "(${step.named.join(', ')}), found ${unknown.join(', ')}")
            }
        }
        return body(*arguments)
    }
}

Map runScenario(Map scenario) {
    Map stashes = Collections.synchronizedMap([:])
    Map files = Collections.synchronizedMap([:])
    Map modelled = steps(scenario, files, stashes)
    def binding = new StrictBinding(modelled.collectEntries { name, step -> [name, bindingValue(name, step)] })
    Branch main = new Branch(null, [:])
    current.set(main)
    String error = null
    try {
        Script script = instance(scenario.script, binding)
        binding.setScript(script)
        script.run()
    } catch (PipelineError failure) {
        error = failure.message
    } catch (AgentLost loss) {  // what the build's log says when no retry took a loss
        error = loss.toString()
    } catch (Unmodelled unmodelled) {
        String message = "${where(unmodelled, scenario.script)}: ${unmodelled.message} Hint: ${UNMODELLED_HINT}"
        return [calls: main.calls, error: null, unmodelled: message]
    } finally {
        current.remove()
    }
    return [calls: main.calls, error: error]
}

// file:line of the script's line that called what the stub does not model.
String where(Throwable problem, String script) {
    String file = new File(script).name
    StackTraceElement frame = problem.stackTrace.find { it.fileName == file && it.lineNumber > 0 }
    return frame ? "${file}:${frame.lineNumber}" : file
}

Map modelledSteps() {
    return [modelled: steps([:], [:], [:]).collectEntries { name, step -> [name, [plugin: step.plugin, named: step.named]] }]
}

// Every step and global variable `path` calls, from its syntax tree after semantic analysis: calls on the
// script itself that are none of its methods, and variables it neither declares nor holds as fields.
Map usesOf(String path) {
    CompilationUnit unit = new CompilationUnit()
    unit.addSource(new File(path))
    unit.compile(Phases.SEMANTIC_ANALYSIS)
    String file = new File(path).name
    Map uses = new TreeMap()
    def use = { String name, int line, Collection named ->
        Map entry = uses[name] ?: (uses[name] = [named: new TreeSet(), line: line])
        entry.named.addAll(named)
        entry.line = Math.min(entry.line, line)
    }
    for (ClassNode script : unit.AST.classes) {
        Set own = script.methods*.name as Set
        def visitor = new ClassCodeVisitorSupport() {
            @Override
            protected SourceUnit getSourceUnit() { null }

            @Override
            void visitMethodCallExpression(MethodCallExpression call) {
                if (call.implicitThis && !(call.methodAsString in own)) {
                    def arguments = call.arguments instanceof TupleExpression ? call.arguments.expressions : []
                    def map = arguments ? arguments[0] : null
                    use(call.methodAsString, call.lineNumber,
                        map instanceof MapExpression ? map.mapEntryExpressions*.keyExpression*.text : [])
                }
                super.visitMethodCallExpression(call)
            }

            @Override
            void visitVariableExpression(VariableExpression variable) {
                if (variable.accessedVariable instanceof DynamicVariable && script.getField(variable.name) == null) {
                    use(variable.name, variable.lineNumber, [])
                }
                super.visitVariableExpression(variable)
            }
        }
        script.methods.findAll { it.lineNumber > 0 || it.name == 'run' }.each { visitor.visitMethod(it) }
    }
    return [uses: uses.collectEntries { name, entry -> [name, [named: entry.named as List, at: "${file}:${entry.line}".toString()]] }]
}

// JSON is read with JsonSlurperClassic, into plain maps and lists: JsonSlurper's lazy maps build themselves on
// first read, so two branches reading one (the selection every stage's build gets) race and one of them fails
// with a ConcurrentModificationException. Jenkins' readJSON gives objects any thread may read.
List scenarios = new JsonSlurperClassic().parse(new File(args[0]))
List results = []
for (Map scenario : scenarios) {
    if (scenario.modelled) {
        results << modelledSteps()
    } else if (scenario.uses) {
        results << usesOf(scenario.uses)
    } else {
        results << (scenario.method ? tableOf(scenario) : runScenario(scenario))
    }
}
println JsonOutput.toJson(results)
List unmodelled = results.findResults { it.unmodelled }
if (unmodelled) {
    unmodelled.each { System.err.println("pipeline_stub.groovy: ${it}") }
    System.exit(1)
}
