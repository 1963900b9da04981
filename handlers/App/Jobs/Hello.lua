local Hello = {}
function Hello.handle(job, command)
    print("hello from Lua, name=" .. tostring(command.name))
end
return Hello
